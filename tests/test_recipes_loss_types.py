"""Notebook 07's comparison: two arms that differ in loss_type alone."""

from kit import recipes

# what an output folder and the arm's own choice may change
PER_ARM = {"output_dir", "logging_dir", "loss_type"}


def arm(loss_type, policy, tmp_path, **args):
    model, tokenizer = policy
    return recipes.loss_type_comparison(
        loss_type, preset="cpu", output_dir=tmp_path / loss_type,
        model=model, tokenizer=tokenizer, **args).args.to_dict()


def test_the_arms_differ_only_in_loss_type(policy, tmp_path):
    grpo, dapo = (arm(name, policy, tmp_path) for name in ("grpo", "dapo"))
    assert (grpo["loss_type"], dapo["loss_type"]) == ("grpo", "dapo")
    assert ({k: v for k, v in grpo.items() if k not in PER_ARM}
            == {k: v for k, v in dapo.items() if k not in PER_ARM})
    # the comparison's own settings over the course recipe's
    for name, value in recipes.LOSS_TYPE_COMPARISON.items():
        assert grpo[name] == value, name
    for name in ("per_device_train_batch_size", "num_generations",
                 "steps_per_generation", "lr_scheduler_type"):
        assert grpo[name] == recipes.GRPO["cpu"][name], name


def test_a_callers_keyword_overrides_the_comparisons(policy, tmp_path):
    # these were fixed keywords once: passing one raised a TypeError
    args = arm("dapo", policy, tmp_path, max_completion_length=8,
               temperature=1.0, max_steps=3)
    assert (args["max_completion_length"], args["temperature"],
            args["max_steps"]) == (8, 1.0, 3)
