"""Checkers for notebook 04's ★★: GRPO's dataloader, one batch for k steps."""

import tempfile
import time

import torch
from torch.utils.data import DataLoader
from transformers import Trainer

from kit import tasks
from kit.checks.compare import Mismatch, Raised, attempt, describe_error
from kit.checks.core import Mistake, Property, exercise, paused
from kit.checks.messages import MESSAGES
from kit.i18n import said, text
from kit.models import load_policy
from kit.trainers import GRPOConfig, GRPOTrainer

NOTEBOOK = "04_grpo_dataloader"


class MyGRPOTrainer(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training",
            sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


class NoTimesK(GRPOTrainer):
    def get_train_dataloader(self):
        return Trainer.get_train_dataloader(self)  # the stock batch size


class TimesG(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.num_generations,
            is_training=True)


class TimesKPlusOne(GRPOTrainer):
    def get_train_dataloader(self):
        k = self.args.steps_per_generation
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * (k + 1), is_training=True)


class TimesGA(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size
            * self.args.gradient_accumulation_steps, is_training=True)


class NoSampler(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training",
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


class PlainDataLoader(GRPOTrainer):
    def get_train_dataloader(self):
        return DataLoader(
            self.train_dataset, sampler=self._get_train_sampler(),
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            collate_fn=self.data_collator)


class SeededByTheClock(GRPOTrainer):
    def get_train_dataloader(self):
        def clock_seeded(dataset):
            sampler = self._get_train_sampler(dataset)
            sampler.seed = int(time.time())  # not self.args.seed
            return sampler
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=clock_seeded,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


@paused()
def _trainer(trainer_class, k=3, batch=8, G=4, GA=1, **args):
    model, tokenizer = load_policy(preset="cpu")
    args = GRPOConfig(tempfile.mkdtemp(), report_to="none", use_cpu=True,
                      per_device_train_batch_size=batch, num_generations=G,
                      steps_per_generation=k, gradient_accumulation_steps=GA,
                      max_completion_length=4, **args)
    return trainer_class(model, [tasks.correctness_reward], args=args,
                         train_dataset=tasks.prompt_dataset("train", n=64),
                         processing_class=tokenizer)


def first_problem(facts):
    """Observations in the judge's order, up to the first wrong one.

    `facts` yields (name, value, problem), problem None when the value is
    right. Stopping at the first problem names a catalogued mistake even
    when an answer also differs in some later way.
    """
    seen = {}
    for name, value, problem in facts:
        seen[name] = value
        if problem:
            seen["problem"] = problem
            break
    return seen


def judge_facts(seen, what):
    if isinstance(seen, Raised):
        error = seen.error
        raise Mismatch(text(MESSAGES, "facts.raised", what=what,
                            error=describe_error(error)))
    if "problem" in seen:
        raise Mismatch(seen["problem"])


# Two configurations where every wrong factor gives another batch size:
# ×1, ×G, ×(k+1), ×GA and the right ×k all differ in one or the other.
LOADERS = (dict(batch=8, G=4, k=3, GA=2), dict(batch=4, G=2, k=2, GA=3))
# Then the first one again with another seed, and with its own once more,
# built in that order: a sampler seeded by the clock gives the three one
# order (built within a second) or the first and last two (across one).
RESEEDED = (dict(LOADERS[0], seed=7), LOADERS[0])


def _loader_facts(trainers):
    trainers, reseeded = trainers[:len(LOADERS)], trainers[len(LOADERS):]
    firsts = []
    for trainer in trainers:
        k = trainer.args.steps_per_generation
        loader = trainer.get_train_dataloader()
        batches = iter(loader)
        firsts.append((loader, [next(batches) for _ in range(k)]))
    rows = tuple(len(first[0]) for _, first in firsts)
    wanted = tuple(c["batch"] * c["k"] for c in LOADERS)
    yield "rows in a batch", rows, rows != wanted and said(
        GET_TRAIN_DATALOADER_WORDS["problem.rows"], first=rows[0],
        second=rows[1])
    grouped = tuple(_in_groups([row["prompt"] for row in first[0]], c["G"])
                    for (_, first), c in zip(firsts, LOADERS))
    yield "each prompt G times in a row", grouped, not all(grouped) and said(
        GET_TRAIN_DATALOADER_WORDS["problem.grouped"])
    repeated = tuple(all(b == first[0] for b in first) for _, first in firsts)
    yield "the same batch k times", repeated, not all(repeated) and said(
        GET_TRAIN_DATALOADER_WORDS["problem.repeated"])
    prepared = tuple(type(loader).__module__.startswith("accelerate")
                     for loader, _ in firsts)
    yield "prepared by accelerate", prepared, not all(prepared) and said(
        GET_TRAIN_DATALOADER_WORDS["problem.prepared"])
    first, other, again = (
        [row["prompt"] for row in next(iter(trainer.get_train_dataloader()))]
        for trainer in trainers[:1] + reseeded)
    seeded = first == again and first != other
    yield "the order follows args.seed", seeded, not seeded and said(
        GET_TRAIN_DATALOADER_WORDS["problem.seeded"])


def _in_groups(prompts, G):
    return all(prompts[i] == prompts[i - i % G] for i in range(len(prompts)))


# What get_train_dataloader's checker says, English beside Japanese: its hint
# ladder (gentlest first), each mistake's (title, why, hint), its judge's
# lines.
GET_TRAIN_DATALOADER_WORDS = {
    "hints": {
        "en": ["Start from the stock method: it returns "
               "self._get_dataloader(...) with "
               "batch_size=self._train_batch_size — so accelerate prepares "
               "the loader, as for any Trainer.",
               "Multiply that batch size by self.args.steps_per_generation: "
               "one batch holds the completions of k steps.",
               "The factor is k exactly: not num_generations (the batch size "
               "already counts completions), not k + 1, not "
               "gradient_accumulation_steps (often equal to k, not always).",
               "Keep sampler_fn=self._get_train_sampler: the sampler "
               "repeats each prompt G times and each big batch k times, in "
               "an order fixed by self.args.seed (a run, and a resume, "
               "replays it)."],
        "ja": ["元のメソッドから始めます: batch_size=self._train_batch_size "
               "で self._get_dataloader(...) を返します。こうすると、どの "
               "Trainer とも同じように accelerate がローダーを準備します。",
               "そのバッチサイズに self.args.steps_per_generation を掛けま"
               "す: 1 つのバッチが k ステップ分の補完を持ちます。",
               "係数はちょうど k です: num_generations (バッチサイズはすでに"
               "補完を数えています) でも、k + 1 でも"
               "、gradient_accumulation_steps (k と等しいことが多いが、いつも"
               "ではない) でもありません。",
               "sampler_fn=self._get_train_sampler は残します。サンプラーが"
               "各プロンプトを G 回、各大きなバッチを k 回、self.args.seed で"
               "決まる順序で繰り返します (実行も再開も同じ順序をたどります)。"]},
    "no_times_k": {
        "en": ("no ×k",
               "one batch must hold the prompts of k steps: the stock batch "
               "size serves one",
               "batch_size=self._train_batch_size * "
               "self.args.steps_per_generation"),
        "ja": ("×k がない",
               "1 つのバッチが k ステップ分のプロンプトを持つ必要があります。"
               "元のバッチサイズでは 1 ステップ分です",
               "batch_size=self._train_batch_size * "
               "self.args.steps_per_generation")},
    "times_G": {
        "en": ("×G",
               "num_generations is already in the batch size (it counts "
               "completions); the batch grows with the steps it serves, k",
               "multiply by self.args.steps_per_generation, not "
               "num_generations"),
        "ja": ("×G",
               "num_generations はすでにバッチサイズに入っています (補完を数"
               "えるので)。バッチは供給するステップ数 k に応じて大きくなりま"
               "す",
               "num_generations ではなく self.args.steps_per_generation を"
               "掛けてください")},
    "times_k_plus_1": {
        "en": ("×(k+1)",
               "a batch serves k steps, not k + 1: the extra slice is "
               "generated and never trained on",
               "multiply by self.args.steps_per_generation alone"),
        "ja": ("×(k+1)",
               "1 つのバッチが供給するのは k + 1 ではなく k ステップです。余"
               "分なスライスは生成されても学習に使われません",
               "self.args.steps_per_generation だけを掛けてください")},
    "times_GA": {
        "en": ("×GA",
               "gradient_accumulation_steps counts micro-steps per optimizer "
               "step; the buffer serves steps_per_generation of them (k = GA "
               "is only the default)",
               "multiply by self.args.steps_per_generation"),
        "ja": ("×GA",
               "gradient_accumulation_steps はオプティマイザのステップあたり"
               "のマイクロステップ数です。バッファーが供給するのは "
               "steps_per_generation 回分です (k = GA は既定値にすぎません)",
               "self.args.steps_per_generation を掛けてください")},
    "no_sampler": {
        "en": ("no sampler",
               "without GRPO's sampler each prompt comes once: no groups of "
               "G, no batch served k times",
               "pass sampler_fn=self._get_train_sampler"),
        "ja": ("サンプラーがない",
               "GRPO のサンプラーがないと各プロンプトは 1 回しか来ません: G "
               "個のグループも、k 回供給されるバッチもありません",
               "sampler_fn=self._get_train_sampler を渡してください")},
    "plain_dataloader": {
        "en": ("a plain DataLoader",
               "the Trainer's loaders go through accelerate (devices, "
               "several processes, resuming)",
               "build it with self._get_dataloader(...), as the stock "
               "method does"),
        "ja": ("素の DataLoader",
               "Trainer のローダーは accelerate を通ります (デバイス、複数プ"
               "ロセス、再開)",
               "元のメソッドと同じく self._get_dataloader(...) で作ってくだ"
               "さい")},
    "seeded_by_the_clock": {
        "en": ("sampler not seeded by args.seed",
               "a sampler seeded by the clock (or not at all) shuffles "
               "another way each run: two runs with one seed differ, and a "
               "resume replays another order than the run it continues",
               "keep sampler_fn=self._get_train_sampler: it seeds the order "
               "with self.args.seed"),
        "ja": ("サンプラーを args.seed で初期化していない",
               "時刻で (または何もせずに) 初期化したサンプラーは実行のたびに"
               "違う順序でシャッフルします。同じシードの 2 つの実行が違い、再"
               "開は続きのはずの実行と別の順序をたどります",
               "sampler_fn=self._get_train_sampler を残してください。順序を "
               "self.args.seed で決めます")},
    "property:rows_in_a_batch": {
        "en": ("rows in a batch",
               "a batch should hold per_device_train_batch_size × "
               "steps_per_generation rows, the completions of k steps"),
        "ja": ("バッチの行数",
               "バッチは per_device_train_batch_size × steps_per_generation "
               "行、k ステップ分の補完を持つべきです")},
    "property:prompt_groups": {
        "en": ("each prompt G times in a row",
               "the batch should hold each prompt num_generations times in "
               "a row: GRPO's sampler lays them out so"),
        "ja": ("各プロンプトが G 回続く",
               "バッチは各プロンプトを num_generations 回続けて持つべきです: "
               "GRPO のサンプラーがそう並べます")},
    "property:batch_served_k_times": {
        "en": ("the same batch k times",
               "the same big batch should come steps_per_generation times: "
               "GRPO's sampler repeats it"),
        "ja": ("同じバッチが k 回",
               "同じ大きなバッチが steps_per_generation 回来るべきです: GRPO "
               "のサンプラーが繰り返します")},
    "property:order_follows_the_seed": {
        "en": ("the order follows args.seed",
               "built twice with one seed the loader should give one order, "
               "and another with another seed: GRPO's sampler shuffles with "
               "self.args.seed"),
        "ja": ("順序が args.seed に従う",
               "同じシードで 2 回作ったローダーは同じ順序を、別のシードでは別"
               "の順序を返すべきです: GRPO のサンプラーは self.args.seed でシ"
               "ャッフルします")},
    "property:prepared_by_accelerate": {
        "en": ("prepared by accelerate",
               "the loader should come from self._get_dataloader(...), "
               "which accelerate prepares"),
        "ja": ("accelerate による準備",
               "ローダーは accelerate が準備する self._get_dataloader(...) "
               "から作るべきです")},
    "problem.rows": {
        "en": "a batch holds {first} rows with "
              "per_device_train_batch_size=8, steps_per_generation=3 (and "
              "{second} with 4 and 2): it should hold 8 × 3 = 24 (and 4 × 2 "
              "= 8), the completions of k steps",
        "ja": "per_device_train_batch_size=8, steps_per_generation=3 でバッ"
              "チが {first} 行です (4 と 2 では {second} 行): k ステップ分の"
              "補完として 8 × 3 = 24 行 (と 4 × 2 = 8 行) であるべきです"},
    "problem.grouped": {
        "en": "each prompt should come num_generations times in a row: use "
              "sampler_fn=self._get_train_sampler",
        "ja": "各プロンプトは num_generations 回続けて来るべきです: "
              "sampler_fn=self._get_train_sampler を使ってください"},
    "problem.repeated": {
        "en": "the same big batch should come steps_per_generation times, "
              "once per step it serves: use "
              "sampler_fn=self._get_train_sampler",
        "ja": "同じ大きなバッチが steps_per_generation 回、供給するステップ"
              "ごとに 1 回来るべきです: sampler_fn=self._get_train_sampler "
              "を使ってください"},
    "problem.prepared": {
        "en": "a plain DataLoader: build it with self._get_dataloader(...) "
              "so accelerate prepares it",
        "ja": "素の DataLoader です: accelerate が準備するよう "
              "self._get_dataloader(...) で作ってください"},
    "problem.seeded": {
        "en": "built twice with seed=42 the loader gave two orders, or one "
              "order with seed=42 and with seed=7: shuffle with "
              "self.args.seed (sampler_fn=self._get_train_sampler), so a "
              "run and its resume replay one order",
        "ja": "seed=42 で 2 回作ったローダーが 2 つの順序を返したか、seed=42 "
              "と seed=7 で同じ順序を返しました。self.args.seed でシャッフル"
              "してください (sampler_fn=self._get_train_sampler)。そうすれば"
              "実行もその再開も同じ順序をたどります"},
    "judge.passed": {
        "en": "one batch of 24 = 8 × 3, served for 3 steps (and 8 = 4 × 2), "
              "in the order args.seed fixes",
        "ja": "24 = 8 × 3 の 1 バッチを 3 ステップ供給します (と 8 = 4 × 2)。"
              "順序は args.seed で決まります"},
}


@exercise("get_train_dataloader", words=GET_TRAIN_DATALOADER_WORDS,
          stars=2, notebook=NOTEBOOK,
          kit_code=("kit.trainers:GRPOTrainer.get_train_dataloader",),
          answer=GRPOTrainer, solution=MyGRPOTrainer,
          method="get_train_dataloader",
          judge=lambda candidate, seen, expected: _judge_batches(seen),
          properties=[  # which fact failed first
              Property("rows_in_a_batch", "rows in a batch", rung=2),
              Property("prompt_groups", "G times in a row", rung=4),
              Property("batch_served_k_times", "k times", rung=4),
              Property("prepared_by_accelerate", "accelerate", rung=1),
              Property("order_follows_the_seed", "args.seed", rung=4),
          ], mistakes=[
              Mistake("no_times_k", NoTimesK, rung=2),
              Mistake("times_G", TimesG, rung=3),
              Mistake("times_k_plus_1", TimesKPlusOne, rung=3),
              Mistake("times_GA", TimesGA, rung=3),
              Mistake("no_sampler", NoSampler, rung=4),
              Mistake("plain_dataloader", PlainDataLoader, rung=1),
              Mistake("seeded_by_the_clock", SeededByTheClock, rung=4),
          ])
def observe_get_train_dataloader(candidate):
    with torch.random.fork_rng(devices=[]):  # the Trainer seeds torch
        trainers = [_trainer(candidate, **config)
                    for config in LOADERS + RESEEDED]
        return attempt(lambda: first_problem(_loader_facts(trainers)))


def _judge_batches(seen):
    judge_facts(seen, "dataloader")
    return said(GET_TRAIN_DATALOADER_WORDS["judge.passed"])
