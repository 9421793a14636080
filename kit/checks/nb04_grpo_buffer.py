"""Checker for notebook 04's ★★★: the generation buffer, `_prepare_inputs`."""

import io
import pickle
from contextlib import contextmanager

import torch

from kit.checks.compare import attempt
from kit.checks.core import Mistake, Property, exercise
from kit.checks.nb04_grpo_dataloader import (NOTEBOOK, MyGRPOTrainer,
                                             _trainer, first_problem,
                                             judge_facts)
from kit.i18n import said
from kit.trainers import GRPOTrainer


class MyBufferedTrainer(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = [{key: None if value is None else value[rows]
                             for key, value in batch.items()}
                            for rows in order.chunk(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


# The mistakes: each delegates to the right answer and changes one thing.

def _reference(trainer, generation_batch):
    return MyBufferedTrainer._prepare_inputs(trainer, generation_batch)


@contextmanager
def _generation_changed(trainer, change):
    """Within: trainer._generate_and_score's batch goes through `change`."""
    own = vars(trainer).get("_generate_and_score")  # the checker's fake
    generate = trainer._generate_and_score
    trainer._generate_and_score = lambda *args, **kwargs: change(
        generate(*args, **kwargs))
    try:
        yield
    finally:
        if own is None:
            del trainer._generate_and_score
        else:
            trainer._generate_and_score = own


class GeneratesEveryStep(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if self.model.training:
            self._buffer = None  # as if the `if` were not there
        return _reference(self, generation_batch)


class NoEvalBranch(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        # in evaluation too: sample, buffer and serve one slice
        training, self.model.training = self.model.training, True
        try:
            return _reference(self, generation_batch)
        finally:
            self.model.training = training


class StepNeverCounted(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        step = self._step
        inputs = _reference(self, generation_batch)
        self._step = step  # no self._step += 1: it stays 0
        return inputs


class DropsNoneValues(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        inputs = _reference(self, generation_batch)
        if not self.model.training:
            return inputs
        return {key: value for key, value in inputs.items()
                if value is not None}


class KeysShuffledApart(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        # a new order for each key: row i of one is not row i of another
        def apart(batch):
            return {key: None if value is None
                    else value[torch.randperm(len(value))]
                    for key, value in batch.items()}
        with _generation_changed(self, apart):
            return _reference(self, generation_batch)


class CountsFirst(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return _reference(self, generation_batch)
        self._step += 1  # counted before it is used
        inputs = _reference(self, generation_batch)
        self._step -= 1  # (the reference's own count, undone)
        return inputs


class NotShuffled(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        generated = []
        with _generation_changed(self, lambda batch: generated.append(
                batch) or batch):
            inputs = _reference(self, generation_batch)
        if not (generated and self.model.training):
            return inputs
        # cut in generation order, with no torch.randperm
        k = self.args.steps_per_generation
        self._buffer = [{key: None if value is None else value.chunk(k)[i]
                         for key, value in generated[0].items()}
                        for i in range(k)]
        return self._buffer[(self._step - 1) % k]


class PopsServedSlices(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if not self._buffer:  # refilled once it runs out
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = [{key: None if value is None else value[rows]
                             for key, value in batch.items()}
                            for rows in order.chunk(k)]
        self._step += 1
        return self._buffer.pop(0)  # a served slice leaves the buffer


# ------------------------------------------------------------ observing

K, BATCH, G, STEPS = 3, 8, 4, 6  # 2 generations, 3 slices of 8 each
GA = 2
KEYS = ("advantages", "completion_ids", "completion_mask",
        "old_per_token_logps", "prompt_ids", "prompt_mask",
        "ref_per_token_logps")


def _numbered_generations(trainer, clock):
    """Replace generation by a counter: row i of generation g is g*1000+i
    in every key (of several widths), so a slice's rows can be traced."""
    calls = []

    def fake(rows, greedy=False):
        mode = "greedy" if greedy else "sample"
        calls.append((mode, clock["step"]))
        # the n-th sampled generation starts at n*1000; evaluations apart
        number = sum(1 for called, _ in calls if called == mode)
        first = number * 1000 + (100_000 if greedy else 0)
        ids = torch.arange(first, first + len(rows))  # (B,)
        return {"prompt_ids": ids[:, None].repeat(1, 2),  # (B, 2)
                "prompt_mask": ids[:, None].repeat(1, 2),
                "completion_ids": ids[:, None].repeat(1, 3),  # (B, 3)
                "completion_mask": ids[:, None].repeat(1, 3),
                "advantages": ids.float(),
                "old_per_token_logps": None,  # on-policy
                "ref_per_token_logps": ids[:, None].repeat(1, 3).float()}
    trainer._generate_and_score = fake
    return calls


def _row_ids(value):
    """Each row's id (its first entry), or None if it is not a tensor."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return None
    return value.reshape(len(value), -1)[:, 0].long().tolist()


SAVE_AT = 4  # micro-steps before the checkpoint: mid-buffer, 1 of 3 served


def _buffer_facts(trainer, fresh):
    """Six micro-steps as the Trainer makes them with GA = 2: the optimizer
    step (state.global_step) one behind every second, out of phase with
    the buffer's k = 3, and an evaluation in between (which is no step).
    Then a resume, as the kit's checkpoint makes it, into `fresh()`."""
    clock = {"step": 0}
    calls = _numbered_generations(trainer, clock)
    trainer.model.train()
    big_batches = iter(trainer.get_train_dataloader())
    served = []
    for step in range(STEPS):
        clock["step"] = step
        trainer.state.global_step = step // GA
        batch = next(big_batches)
        served.append(trainer._prepare_inputs(batch))
        if step == 1:  # eval_steps=1: the Trainer evaluates here
            trainer.model.eval()
            before = (trainer._step, len(calls))
            trainer._prepare_inputs(list(batch))
            # greedy, and no step: said first, since a wrong evaluation
            # branch shows later as a wrong step count or generation step
            between = ([mode for mode, _ in calls[before[1]:]],
                       trainer._step - before[0])
            trainer.model.train()
        if step + 1 == SAVE_AT:
            saved = _saved(trainer)
    yield "an evaluation between steps", between, between != (
        ["greedy"], 0) and said(PREPARE_INPUTS_WORDS["problem.evaluation"])
    steps = trainer._step
    yield "self._step after 6 steps", steps, steps != STEPS and said(
        PREPARE_INPUTS_WORDS["problem.step"], steps=steps)
    when = [step for mode, step in calls if mode == "sample"]
    yield "steps that generate", when, when != [0, K] and said(
        PREPARE_INPUTS_WORDS["problem.when"], when=when)
    if not all(isinstance(inputs, dict) for inputs in served):
        kind = next(type(i).__name__ for i in served if not isinstance(i,
                                                                        dict))
        yield "slices", kind, said(PREPARE_INPUTS_WORDS["problem.kind"],
                                   kind=kind)
    keys = [{key: "None" if value is None else len(value)
             for key, value in inputs.items()} for inputs in served]
    yield "keys of each slice", keys, _keys_problem(keys)
    ids = [{key: _row_ids(value) for key, value in inputs.items()}
           for inputs in served]
    aligned = [all(rows == slice_["advantages"] for rows in slice_.values()
                   if rows is not None) for slice_ in ids]
    yield "every key row-aligned", aligned, not all(aligned) and said(
        PREPARE_INPUTS_WORDS["problem.aligned"],
        step=aligned.index(False))
    covered = [_covers(ids[K * g:K * g + K], 1000 * (g + 1)) for g in (0, 1)]
    yield "each generation served once", covered, not all(covered) and said(
        PREPARE_INPUTS_WORDS["problem.covered"])
    mixed = any(len({(i % 1000) // G for i in slice_["advantages"]})
                > BATCH // G for slice_ in ids)
    yield "slices mix the groups", mixed, not mixed and said(
        PREPARE_INPUTS_WORDS["problem.mixed"])
    trainer.model.eval()
    calls.clear()
    evaluated = trainer._prepare_inputs(next(big_batches))
    served_all = (len(evaluated["completion_ids"])
                  if isinstance(evaluated, dict) and isinstance(
                      evaluated.get("completion_ids"), torch.Tensor)
                  else type(evaluated).__name__)
    evaluation = ([mode for mode, _ in calls], served_all)
    yield "evaluation", evaluation, evaluation != (
        ["greedy"], K * BATCH) and said(
            PREPARE_INPUTS_WORDS["problem.evaluation"])
    resumed = _resumed(fresh(), saved, ids[SAVE_AT:])
    problem = {"refused": PREPARE_INPUTS_WORDS["problem.refused"],
               "other slices": PREPARE_INPUTS_WORDS["problem.other slices"]}
    yield "resumed mid-buffer", resumed, resumed is not True and said(
        problem[resumed])


def _saved(trainer):
    """What the kit's checkpoint keeps of the trainer (its step, buffer
    and counters), written and read back as a resume reads it; "refused"
    where torch.load(weights_only=True) would refuse it."""
    file = io.BytesIO()
    torch.save(trainer.checkpoint_state(), file)
    file.seek(0)
    try:
        return torch.load(file, weights_only=True)
    except pickle.UnpicklingError:
        return "refused"


def _resumed(trainer, saved, wanted):
    """True if a trainer resumed from `saved` serves the slices the run
    that went on served (row ids `wanted`); "refused" where the kit's
    resume refuses the state, "other slices" where it serves others."""
    if saved == "refused" or trainer.checkpoint_state_problem(
            saved, SAVE_AT // GA):
        return "refused"
    trainer.load_checkpoint_state(saved)
    _numbered_generations(trainer, {"step": SAVE_AT})  # ids from 1000 again
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    served = [trainer._prepare_inputs(batch) for _ in wanted]
    ids = [{key: _row_ids(value) for key, value in inputs.items()}
           if isinstance(inputs, dict) else None for inputs in served]
    return True if ids == wanted else "other slices"


def _keys_problem(keys):
    for step, slice_keys in enumerate(keys):
        missing = [key for key in KEYS if key not in slice_keys]
        if missing:
            return said(PREPARE_INPUTS_WORDS["problem.missing key"],
                        step=step, key=missing[0])
        if slice_keys["old_per_token_logps"] != "None":
            return said(PREPARE_INPUTS_WORDS["problem.none kept"],
                        step=step)
        if slice_keys["completion_ids"] != BATCH:
            return said(PREPARE_INPUTS_WORDS["problem.slice size"],
                        step=step, count=slice_keys["completion_ids"])
    return None


def _covers(slices, first):
    """The slices hold ids first..first+23, each once."""
    rows = [slice_["advantages"] for slice_ in slices]
    if any(r is None for r in rows):
        return False
    return sorted(sum(rows, [])) == list(range(first, first + K * BATCH))


# What prepare_inputs's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint), its judge's lines.
PREPARE_INPUTS_WORDS = {
    "hints": {
        "en": ["Generate only when self._step % k == 0 (or there is no "
               "buffer yet): self._generate_and_score(generation_batch). In "
               "between, serve from the buffer.",
               "Use the step, then count it: choose the slice "
               "self._buffer[self._step % k], and only then self._step += 1 "
               "— every call, or the buffer is refilled at the wrong step. "
               "Keep all k slices in the buffer: a checkpoint saves it as "
               "it stands.",
               "Cut the generated batch into k slices of equal size, keeping "
               "every key (None stays None) in each slice.",
               "Shuffle the rows before cutting, with one order for every "
               "key: order = torch.randperm(n), then value[rows] for rows in "
               "order.chunk(k). Each slice mixes prompts, and row i of every "
               "key is still the same completion.",
               "In eval mode (not self.model.training), generate greedily "
               "and serve everything: no buffer."],
        "ja": ["self._step % k == 0 のとき (またはまだバッファーがないとき) "
               "だけ生成します: self._generate_and_score(generation_batch)。"
               "その間はバッファーから供給します。",
               "ステップを使ってから数えます。スライス "
               "self._buffer[self._step % k] を選び、そのあとで self._step "
               "+= 1。毎回の呼び出しでそうしないと、バッファーが間違ったステ"
               "ップで補充されます。バッファーには k 個のスライスをすべて残し"
               "ます。チェックポイントはそれをそのまま保存します。",
               "生成したバッチを同じ大きさの k 個のスライスに切り、各スライス"
               "にすべてのキーを残します (None は None のまま)。",
               "切る前に、すべてのキーで同じ順序で行をシャッフルします: "
               "order = torch.randperm(n)、そして order.chunk(k) の rows ごと"
               "に value[rows]。各スライスにプロンプトが混ざり、どのキーの行 "
               "i も同じ補完のままです。",
               "評価モード (self.model.training でない) では貪欲に生成して"
               "すべてを供給します。バッファーは使いません。"]},
    "generates_every_step": {
        "en": ("generates every step",
               "the buffer is refilled at each call, so k slices never share "
               "one generate()",
               "generate only when self._step % k == 0"),
        "ja": ("毎ステップ生成する",
               "呼び出しごとにバッファーが補充されるので、k 個のスライスが 1 "
               "回の generate() を共有することがありません",
               "self._step % k == 0 のときだけ生成してください")},
    "no_eval_branch": {
        "en": ("no eval branch",
               "evaluation then samples and serves one slice: held-out "
               "answers must be greedy and complete",
               "first: if not self.model.training: return "
               "self._generate_and_score(generation_batch, greedy=True)"),
        "ja": ("評価の分岐がない",
               "これでは評価でもサンプリングしてスライスを 1 つだけ供給しま"
               "す: held-out の補完は貪欲で、すべてそろっている必要があります",
               "最初に: `if not self.model.training: return "
               "self._generate_and_score(generation_batch, greedy=True)`")},
    "step_never_counted": {
        "en": ("step never counted",
               "self._step stays 0, so every step generates anew and serves "
               "slice 0 — k brings no saving at all",
               "add self._step += 1 before returning the slice"),
        "ja": ("ステップを数えていない",
               "self._step が 0 のままなので、毎ステップ新たに生成してスライ"
               "ス 0 を供給します: k による節約がまったくありません",
               "スライスを返す前に self._step += 1 を加えてください")},
    "none_values_dropped": {
        "en": ("None values dropped",
               "compute_loss reads inputs['old_per_token_logps'] even when "
               "it is None: a missing key is a KeyError two cells later",
               "keep every key: None if value is None else value[rows]"),
        "ja": ("None の値を落とした",
               "compute_loss は None のときでも "
               "inputs['old_per_token_logps'] を読みます。キーがないと 2 セル"
               "後に KeyError になります",
               "すべてのキーを残します: `None if value is None else "
               "value[rows]`")},
    "keys_shuffled_apart": {
        "en": ("keys shuffled apart",
               "each key got its own order, so a slice's completion_ids, "
               "masks and advantages belong to different completions: it "
               "trains, on nonsense",
               "one order = torch.randperm(n) for the batch, then "
               "value[rows] for every key"),
        "ja": ("キーごとにばらばらにシャッフルした",
               "キーごとに別の順序になったので、スライスの completion_ids, マ"
               "スク、アドバンテージが別々の補完のものになります。学習は進み"
               "ますが、でたらめなデータでです",
               "バッチに 1 つの order = torch.randperm(n)、そしてすべてのキ"
               "ーで value[rows]")},
    "refilled_on_wrong_step": {
        "en": ("refilled on the wrong step",
               "counting the step before using it generates at steps 0, 2, 5 "
               "instead of 0, 3: one generation comes from the old prompts "
               "and slices go unserved",
               "test self._step % k and serve self._buffer[self._step % k] "
               "first, then self._step += 1"),
        "ja": ("間違ったステップで補充した",
               "ステップを使う前に数えると、0, 3 ではなく 0, 2, 5 で生成しま"
               "す: 1 回の生成は古いプロンプトから行われ、供給されないスライ"
               "スが出ます",
               "先に self._step % k を調べて self._buffer[self._step % k] "
               "を供給し、そのあとで self._step += 1")},
    "not_shuffled": {
        "en": ("not shuffled",
               "each slice then holds whole groups in generation order: with "
               "GA < k, an optimizer step sees only a few prompts (TRL "
               "shuffles, shuffle_sequence_dict)",
               "order = torch.randperm(n), then value[rows] for rows in "
               "order.chunk(k)"),
        "ja": ("シャッフルしていない",
               "これでは各スライスが生成順のグループをまるごと持ちます: GA < "
               "k では、オプティマイザのステップがわずかなプロンプトしか見ま"
               "せん (TRL は shuffle_sequence_dict でシャッフルします)",
               "order = torch.randperm(n)、そして order.chunk(k) の rows ご"
               "とに value[rows]")},
    "pops_served_slices": {
        "en": ("served slices removed",
               "a buffer that shrinks as it serves (.pop(0)) trains, but "
               "the kit's checkpoint saves it as it stands, and a resume "
               "mid-buffer, which serves self._buffer[self._step % k] from "
               "k slices, is refused",
               "keep all k slices until the next generation: serve "
               "self._buffer[self._step % k], do not remove it"),
        "ja": ("供給したスライスを取り除いた",
               "供給するたびに縮むバッファー (.pop(0)) でも学習は進みますが、"
               "kit のチェックポイントはそれをそのまま保存し、k 個のスライス"
               "から self._buffer[self._step % k] を供給するバッファーの途中"
               "からの再開は拒否されます",
               "次の生成まで k 個のスライスをすべて残します: "
               "self._buffer[self._step % k] を供給し、取り除かないでくださ"
               "い")},
    "property:resume": {
        "en": ("a resume mid-buffer",
               "a run resumed from a checkpoint taken mid-buffer should "
               "serve the slices the run that went on served: the "
               "checkpoint keeps self._step and self._buffer, all k "
               "slices"),
        "ja": ("バッファーの途中からの再開",
               "バッファーの途中で取ったチェックポイントから再開した実行は、"
               "そのまま続けた実行と同じスライスを供給するべきです。チェック"
               "ポイントは self._step と self._buffer (k 個のスライスすべて) "
               "を保存します")},
    "property:step_count": {
        "en": ("the step count",
               "self._step should count every call: k calls serve one "
               "generation, and the count says when the next one is due"),
        "ja": ("ステップの数え方",
               "self._step は呼び出しごとに数えるべきです: k 回の呼び出しで 1 "
               "回の生成を供給し、その数が次の生成の時を決めます")},
    "property:when_to_generate": {
        "en": ("when to generate",
               "generation should happen at steps 0, k, 2k, ... only: "
               "served from the buffer in between"),
        "ja": ("生成する時",
               "生成はステップ 0, k, 2k, ... のときだけで、その間はバッファー"
               "から供給するべきです")},
    "property:slices": {
        "en": ("the slices",
               "each of the k slices should hold every key of the generated "
               "batch, None staying None, with rows of equal number"),
        "ja": ("スライス",
               "k 個のスライスはそれぞれ、生成したバッチのすべてのキーを持ち "
               "(None は None のまま)、行数がそろうべきです")},
    "property:one_order": {
        "en": ("one order for every key",
               "row i of every key should stay the same completion, and the "
               "slices should mix the prompts: one shuffle for all keys"),
        "ja": ("すべてのキーに 1 つの順序",
               "どのキーでも行 i は同じ補完のままで、スライスはプロンプトを混"
               "ぜるべきです。すべてのキーに 1 つのシャッフルを使います")},
    "property:evaluation": {
        "en": ("evaluation",
               "in eval mode everything generated should be served at "
               "once, greedily, without the buffer"),
        "ja": ("評価",
               "評価モードでは、生成したものをバッファーを使わず、貪欲に一度で"
               "すべて供給するべきです")},
    "problem.step": {
        "en": "after 6 steps self._step is {steps}, not 6: count every call "
              "with self._step += 1",
        "ja": "6 ステップ後の self._step が 6 ではなく {steps} です。毎回の"
              "呼び出しを self._step += 1 で数えてください"},
    "problem.when": {
        "en": "with steps_per_generation=3, generation should run at steps 0 "
              "and 3, when a new big batch comes; yours ran at steps {when}",
        "ja": "steps_per_generation=3 では、新しい大きなバッチが来るステップ"
              " 0 と 3 で生成するべきです。あなたのコードはステップ {when} "
              "で生成しました"},
    "problem.kind": {
        "en": "_prepare_inputs returned a {kind}: serve a dict, one slice of "
              "the generated batch",
        "ja": "_prepare_inputs が {kind} を返しました。生成したバッチの 1 ス"
              "ライスを dict で供給してください"},
    "problem.aligned": {
        "en": "step {step}'s slice: row i of one key is not row i of another "
              "— shuffle every key with the same order (one torch.randperm, "
              "then value[rows] for each key)",
        "ja": "ステップ {step} のスライス：あるキーの行 i が別のキーの行 i "
              "と対応していません。すべてのキーを同じ順序でシャッフルしてく"
              "ださい (torch.randperm を 1 回、そして各キーで value[rows])"},
    "problem.covered": {
        "en": "the 3 slices of each generation should cover its 24 "
              "completions once each",
        "ja": "各生成の 3 つのスライスは、その 24 個の補完をちょうど 1 回ず"
              "つ含むべきです"},
    "problem.mixed": {
        "en": "each slice holds whole groups in the order they were "
              "generated: shuffle the rows before cutting (order = "
              "torch.randperm(n)), as TRL's shuffle_sequence_dict does",
        "ja": "各スライスが生成順のグループをまるごと持っています: TRL の "
              "shuffle_sequence_dict のように、切る前に行をシャッフルしてく"
              "ださい (order = torch.randperm(n))"},
    "problem.evaluation": {
        "en": "in evaluation (model.training is False) generate greedily and "
              "serve it all: return self._generate_and_score(batch, "
              "greedy=True)",
        "ja": "評価 (model.training が False) では貪欲に生成してすべてを供給"
              "します: return self._generate_and_score(batch, greedy=True)"},
    "problem.missing key": {
        "en": "step {step}'s slice has no key {key!r}: keep every key of the "
              "generated batch, None values too",
        "ja": "ステップ {step} のスライスにキー {key!r} がありません。生成し"
              "たバッチのすべてのキーを、None の値も含めて残してください"},
    "problem.none kept": {
        "en": "step {step}'s old_per_token_logps should stay None (None if "
              "value is None else value[rows])",
        "ja": "ステップ {step} の old_per_token_logps は None のままであるべ"
              "きです (`None if value is None else value[rows]`)"},
    "problem.slice size": {
        "en": "step {step} got {count} completions; each step gets a slice "
              "of per_device_train_batch_size=8",
        "ja": "ステップ {step} は {count} 個の補完を受け取りました。各ステッ"
              "プは per_device_train_batch_size=8 のスライスを受け取ります"},
    "problem.refused": {
        "en": "a checkpoint saved after 4 steps, mid-buffer, cannot be "
              "resumed: the kit saves self._step and self._buffer as they "
              "stand and resumes by serving self._buffer[self._step % k], "
              "so keep all 3 slices until the next generation (serve a "
              "slice, do not remove it)",
        "ja": "4 ステップ後、バッファーの途中で保存したチェックポイントから"
              "再開できません。kit は self._step と self._buffer をそのまま"
              "保存し、再開では self._buffer[self._step % k] を供給します。"
              "次の生成まで 3 つのスライスをすべて残してください (スライスを"
              "供給しても取り除かない)"},
    "problem.other slices": {
        "en": "resumed from a checkpoint saved after 4 steps, the next 2 "
              "steps got other slices than the run that went on: keep what "
              "says which slice comes next in self._step and self._buffer, "
              "the two the kit's checkpoint saves",
        "ja": "4 ステップ後に保存したチェックポイントから再開すると、次の 2 "
              "ステップがそのまま続けた実行とは別のスライスを受け取りました。"
              "次にどのスライスを出すかは、kit のチェックポイントが保存する "
              "self._step と self._buffer に持たせてください"},
    "judge.passed": {
        "en": "one generation every 3 steps, 3 shuffled slices that cover "
              "it, every key aligned, resumed mid-buffer as it went on",
        "ja": "3 ステップごとに 1 回の生成、それを覆うシャッフル済みの 3 ス"
              "ライス、すべてのキーがそろっていて、バッファーの途中からの再開"
              "も続けた実行と同じです"},
}


@exercise("prepare_inputs", words=PREPARE_INPUTS_WORDS,
          stars=3, notebook=NOTEBOOK,
          kit_code=("kit.trainers:GRPOTrainer._prepare_inputs",),
          answer=GRPOTrainer, solution=MyBufferedTrainer,
          method="_prepare_inputs",
          uses=[("get_train_dataloader", "get_train_dataloader",
                 GRPOTrainer.get_train_dataloader)],
          judge=lambda candidate, seen, expected: _judge_slices(seen),
          mistakes=[
              Mistake("generates_every_step", GeneratesEveryStep, rung=1),
              Mistake("no_eval_branch", NoEvalBranch, rung=5),
              Mistake("step_never_counted", StepNeverCounted, rung=2),
              Mistake("none_values_dropped", DropsNoneValues, rung=3),
              Mistake("keys_shuffled_apart", KeysShuffledApart, rung=4),
              Mistake("refilled_on_wrong_step", CountsFirst, rung=2),
              Mistake("not_shuffled", NotShuffled, rung=4),
              Mistake("pops_served_slices", PopsServedSlices, rung=2),
          ], properties=[  # which fact failed first
              Property("step_count", "self._step", rung=2),
              Property("when_to_generate", "steps that generate", rung=1),
              Property("slices", lambda fact: fact in (
                  "slices", "keys of each slice",
                  "each generation served once"), rung=3),
              Property("one_order", lambda fact: fact in (
                  "every key row-aligned", "slices mix the groups"), rung=4),
              Property("evaluation", "evaluation", rung=5),
              Property("resume", "resumed", rung=2),
          ])
def observe_prepare_inputs(candidate):
    # the Trainer seeds torch, so does the shuffle: leave the notebook's
    # random state as it was (and give any shuffle a fixed seed)
    def fresh():
        return _trainer(candidate, k=K, batch=BATCH, G=G, GA=GA)
    with torch.random.fork_rng(devices=[]):
        trainer = fresh()
        torch.manual_seed(0)
        return attempt(lambda: first_problem(_buffer_facts(trainer, fresh)))


def _judge_slices(seen):
    judge_facts(seen, "_prepare_inputs")
    return said(PREPARE_INPUTS_WORDS["judge.passed"])
