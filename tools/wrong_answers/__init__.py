"""Wrong answers written as learners write them, none copied from a
checker's catalogue, and right answers written another way than the kit's.

Each wrong answer breaks one idea an exercise teaches, and says which
rung of the exercise's hint ladder teaches it: `@wrong(id, rung)`.
tools/naming.py checks them all and counts how many check() names (a
catalogued mistake or a property of the inputs) and whether hint 1, right
after, is that rung. `@right(id)`: an answer check() must pass.
"""

WRONG = []  # (exercise id, rung that teaches what it misses, answer)
RIGHT = []  # (exercise id, answer)


def wrong(exercise_id, rung):
    def register(answer):
        WRONG.append((exercise_id, rung, answer))
        return answer
    return register


def right(exercise_id):
    def register(answer):
        RIGHT.append((exercise_id, answer))
        return answer
    return register
