"""Checker for notebook 03's ★★★: DPO's `compute_loss` override."""

import copy
import tempfile

import torch

from kit import losses, tasks
from kit.checks import nb03_dpo_losses as dpo
from kit.checks.compare import (Mismatch, Raised, agreement, attempt, compare,
                                describe_error, same)
from kit.checks.core import Mistake, Property, exercise, paused
from kit.i18n import said
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer


class MyDPOTrainer(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        completion_mask = inputs["completion_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = sequence_logps(logits, ids, completion_mask)  # (2B,)
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids,
                                        attention_mask=mask).logits
            ref_logps = sequence_logps(ref_logits, ids, completion_mask)
        chosen, rejected = logps.chunk(2)
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        loss = losses.sum() / (num_items_in_batch or len(losses))
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


sequence_logps, dpo_loss = dpo.sequence_logps, dpo.dpo_loss  # as in 03


# The mistakes: each changes one thing of the right answer.

class AttentionMaskAsCompletionMask(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        inputs = {**inputs, "completion_mask": inputs["attention_mask"]}
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs,
                                         num_items_in_batch)


class PolicyAsItsOwnReference(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        reference, self.ref_model = self.ref_model, model  # π, detached
        try:
            return MyDPOTrainer.compute_loss(self, model, inputs,
                                             return_outputs,
                                             num_items_in_batch)
        finally:
            self.ref_model = reference


class MeanOverMicroBatch(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # as if num_items_in_batch were never passed: losses.mean()
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs)


class ChunksSwapped(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # rejected, chosen = logps.chunk(2): as if the collator had put the
        # rejected answers first
        inputs = {key: torch.cat(value.chunk(2)[::-1])
                  for key, value in inputs.items()}
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs,
                                         num_items_in_batch)


class DetachedLoss(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        with torch.no_grad():  # the policy's forward too: no gradient left
            return MyDPOTrainer.compute_loss(self, model, inputs,
                                             return_outputs,
                                             num_items_in_batch)


class PerPairLosses(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        completion_mask = inputs["completion_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = sequence_logps(logits, ids, completion_mask)
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids,
                                        attention_mask=mask).logits
            ref_logps = sequence_logps(ref_logits, ids, completion_mask)
        chosen, rejected = logps.chunk(2)
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        losses_, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (losses_, {"chosen_logps": chosen}) if return_outputs \
            else losses_  # one loss per pair: (B,)


class DividesByGA(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # num_items_in_batch already counts the pairs of all GA micro-batches
        pairs = len(inputs["input_ids"]) // 2
        items = (num_items_in_batch or pairs) \
            * self.args.gradient_accumulation_steps
        return MyDPOTrainer.compute_loss(self, model, inputs, return_outputs,
                                         items)


class ValueProperty(Property):
    """A property an answer misses by computing another value. A crash
    misses none: split by a fixed size, a short micro-batch raises, and the
    learner's own error says what broke, not our words about dividing."""

    def fits(self, seen, expected, differs, stopped=False):
        return not any(isinstance(seen.get(name), Raised)
                       for name in differs) and super().fits(
                           seen, expected, differs, stopped)


class Unmoved(ValueProperty):
    """β written in, whatever the number: the answer's loss stays put when
    self.args.beta goes from 1 to 0.1, where the reference's moves. (A
    check at the two β alone cannot see 0.5 written in: wrong at both.)"""

    def fits(self, seen, expected, differs, stopped=False):
        at_1, at_01 = "loss", "loss (beta=0.1)"
        if not (differs and isinstance(seen.get(at_1), torch.Tensor)
                and isinstance(seen.get(at_01), torch.Tensor)):
            return False
        return (same(seen[at_1], seen[at_01])
                and not same(expected[at_1], expected[at_01]))


@paused()
def _dpo_setup(trainer_class, pairs=6):
    model, tokenizer = load_policy(preset="cpu")
    reference = copy.deepcopy(model)
    torch.manual_seed(0)
    with torch.no_grad():  # move the policy off the reference: ratios ≠ 0
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    # GA = 2: num_items_in_batch already counts both micro-batches' pairs,
    # so an answer that divides by GA as well is seen to be off. β = 1, as
    # notebook 03 trains: an answer with it written in is right but at the
    # second β observe() tries
    args = DPOConfig(tempfile.mkdtemp(), beta=1.0, report_to="none",
                     use_cpu=True, per_device_train_batch_size=pairs,
                     gradient_accumulation_steps=2)
    data = tasks.preference_dataset("train", n=pairs)
    trainer = trainer_class(model=model, ref_model=reference, args=args,
                            train_dataset=data, processing_class=tokenizer)
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    return trainer, batch


def _logged(trainer):
    """The metrics compute_loss recorded for the logs: {name: tensor}."""
    sums = trainer._metrics  # {mode: {name: [sum, count]}}
    return {name: torch.tensor([total / count])
            for mode in ("train", "eval")
            for name, (total, count) in sums[mode].items()}


def _first_pairs(batch, n):
    """The micro-batch of the first `n` pairs: [chosen; rejected] again."""
    return {key: torch.cat([half[:n] for half in value.chunk(2)])
            for key, value in batch.items()}


def _gradient(model, loss):
    """d loss / d parameters, flat; None when the loss cannot have one."""
    if not (isinstance(loss, torch.Tensor) and loss.dim() == 0
            and loss.requires_grad):
        return None  # judged as the loss itself: no gradient to take
    parameters = list(model.parameters())
    grads = torch.autograd.grad(loss, parameters, allow_unused=True)
    return torch.cat([torch.zeros(p.numel()) if g is None else g.flatten()
                      for g, p in zip(grads, parameters)])


def _compute(trainer, batch, **options):
    loss = trainer.compute_loss(trainer.model, dict(batch), **options)
    if isinstance(loss, tuple):
        return ("tuple", len(loss)) + tuple(
            x.detach() if isinstance(x, torch.Tensor) else type(x).__name__
            for x in loss[:1])
    return loss


# What dpo_compute_loss's checker says, English beside Japanese: its hint
# ladder (gentlest first), each mistake's (title, why, hint), its judge's
# lines.
DPO_COMPUTE_LOSS_WORDS = {
    "hints": {
        "en": ["One forward pass of the policy over inputs['input_ids'] "
               "(with its attention_mask); sequence_logps with "
               "inputs['completion_mask'] — not the attention mask, which "
               "covers the prompt too — gives (2B,) log-probs.",
               "The reference runs under torch.no_grad(): "
               "self.ref_model(...), the same inputs. Not the policy, "
               "detached: its log-ratios would all be 0.",
               "The collator stacks [chosen; rejected]: chosen, rejected = "
               "logps.chunk(2), two halves however many pairs the "
               "micro-batch holds, in that order, for the reference too.",
               "Only the reference goes under no_grad: the policy's forward "
               "must keep its graph, or the loss has no gradient to train "
               "with.",
               "Return one number: losses.sum() / (num_items_in_batch or "
               "len(losses)). num_items_in_batch already counts the pairs "
               "of every micro-batch of the step: no .mean(), no division "
               "by gradient_accumulation_steps.",
               "β is the config's: dpo_loss(..., beta=self.args.beta). "
               "Notebook 03 trains with β = 1, and the checker tries 0.1 "
               "too."],
        "ja": ["方策の順伝播を inputs['input_ids'] (とその attention_mask) で"
               " 1 回行い、inputs['completion_mask'] で sequence_logps を取る"
               "と (2B,) の対数確率が得られます。attention mask はプロンプト"
               "も含むので使いません。",
               "参照モデルは torch.no_grad() の下で実行します: "
               "self.ref_model(...) に同じ入力を渡します。方策を切り離したも"
               "のではありません。それでは対数比がすべて 0 になります。",
               "コレーターは [chosen; rejected] の順に積みます: chosen, "
               "rejected = logps.chunk(2)。マイクロバッチのペア数にかかわらず"
               "半分ずつです。参照モデルも同じ順です。",
               "no_grad の下に置くのは参照モデルだけです。方策の順伝播は計算"
               "グラフを残さないと、損失に学習のための勾配がありません。",
               "1 つの数を返します: losses.sum() / (num_items_in_batch or "
               "len(losses))。num_items_in_batch はすでにそのステップのすべ"
               "てのマイクロバッチのペアを数えています: .mean() も "
               "gradient_accumulation_steps での割り算もしません。",
               "β は設定の値です: dpo_loss(..., beta=self.args.beta)。ノート"
               "ブック 03 は β = 1 で学習し、チェッカーは 0.1 でも試します。"]},
    "property:beta_written_in": {
        "en": ("beta written in",
               "your loss stays as it is when the config's β goes from 1 to "
               "0.1: read β from self.args.beta"),
        "ja": ("β の決め打ち",
               "設定の β を 1 から 0.1 にしても損失が変わりません: β は "
               "self.args.beta から読みます")},
    "property:uneven_micro_batch": {
        "en": ("an uneven micro-batch",
               "right on a micro-batch of the step's size, wrong on 4 of the "
               "step's 10 pairs: the sum of the losses is divided by "
               "num_items_in_batch, the step's pairs, not by this "
               "micro-batch's"),
        "ja": ("不揃いなマイクロバッチ",
               "ステップと同じ大きさのマイクロバッチでは正しく、ステップの 10 "
               "ペアのうち 4 ペアで違います。損失の合計は、このマイクロバッチの"
               "ペア数ではなく、ステップのペア数 num_items_in_batch で割りま"
               "す")},
    "property:num_items_in_batch": {
        "en": ("num_items_in_batch given",
               "right when num_items_in_batch is None, wrong when the "
               "Trainer gives it: then it, not len(losses), divides the "
               "sum"),
        "ja": ("num_items_in_batch が与えられたとき",
               "num_items_in_batch が None のときは正しく、Trainer が与えると"
               "違います。そのときは len(losses) ではなくそれで合計を割ります")},
    "property:gradient": {
        "en": ("the gradient",
               "the loss is right, its gradient to the policy is not: only "
               "the reference runs under no_grad"),
        "ja": ("勾配",
               "損失は正しく、方策への勾配が違います: no_grad の下で実行する"
               "のは参照モデルだけです")},
    "attention_mask_as_completion_mask": {
        "en": ("attention mask as completion mask",
               "the prompt's log-probs cancel in the loss, but the logged "
               "log-probs and rewards count the prompt too",
               "pass inputs['completion_mask'] to sequence_logps"),
        "ja": ("attention mask を completion mask として使った",
               "プロンプトの対数確率は損失では打ち消し合いますが、ログに記録"
               "する対数確率と報酬にはプロンプトも数えられます",
               "sequence_logps には inputs['completion_mask'] を渡してくだ"
               "さい")},
    "policy_as_reference": {
        "en": ("policy as its own reference",
               "with ref = π (detached) every log-ratio is 0: the loss is "
               "log 2 whatever the policy does",
               "run self.ref_model under torch.no_grad() for the reference "
               "log-probs"),
        "ja": ("方策を自身の参照モデルにした",
               "ref = π (切り離したもの) では対数比がすべて 0 です。方策が何"
               "をしても損失は log 2 です",
               "参照モデルの対数確率には torch.no_grad() の下で "
               "self.ref_model を実行してください")},
    "mean_over_micro_batch": {
        "en": ("mean over a micro-batch",
               "under gradient accumulation each micro-batch's mean gets the "
               "same weight, whatever its size",
               "return losses.sum() / (num_items_in_batch or len(losses))"),
        "ja": ("マイクロバッチでの平均",
               "勾配累積では、各マイクロバッチの平均が大きさに関係なく同じ重"
               "みになります",
               "return losses.sum() / (num_items_in_batch or len(losses))")},
    "chunks_swapped": {
        "en": ("chosen and rejected swapped",
               "the first half of the batch is the chosen answers: taken as "
               "rejected, DPO learns to prefer the rejected ones",
               "chosen, rejected = logps.chunk(2) (and ref_chosen, "
               "ref_rejected likewise)"),
        "ja": ("chosen と rejected が逆",
               "バッチの前半は chosen の補完です: rejected として扱うと、DPO "
               "は rejected の補完を好むように学習します",
               "chosen, rejected = logps.chunk(2) (ref_chosen, "
               "ref_rejected も同様)")},
    "detached_loss": {
        "en": ("detached loss",
               "the policy's forward ran under torch.no_grad() (or the loss "
               "was .detach()ed): training stops at 'element 0 of tensors "
               "does not require grad'",
               "keep only the reference under torch.no_grad()"),
        "ja": ("切り離された損失",
               "方策の順伝播が torch.no_grad() の下で実行されました (または損"
               "失を .detach() しました): 学習は `element 0 of tensors does "
               "not require grad` で止まります",
               "torch.no_grad() の下に置くのは参照モデルだけにしてください")},
    "per_pair_losses": {
        "en": ("per-pair losses returned",
               "the Trainer calls .backward() on what compute_loss returns: "
               "it needs one number, not one per pair",
               "return losses.sum() / (num_items_in_batch or len(losses))"),
        "ja": ("ペアごとの損失を返した",
               "Trainer は compute_loss が返すものに .backward() を呼びます。"
               "ペアごとではなく 1 つの数が必要です",
               "return losses.sum() / (num_items_in_batch or len(losses))")},
    "divides_by_ga": {
        "en": ("divided by GA as well",
               "num_items_in_batch already counts the pairs of all "
               "gradient_accumulation_steps micro-batches: dividing by GA "
               "again makes the gradient GA times too small",
               "losses.sum() / (num_items_in_batch or len(losses)), nothing "
               "more"),
        "ja": ("GA でも割った",
               "num_items_in_batch はすでに gradient_accumulation_steps 個す"
               "べてのマイクロバッチのペアを数えています。さらに GA で割ると"
               "勾配が GA 分の 1 に小さくなります",
               "losses.sum() / (num_items_in_batch or len(losses)) だけにし"
               "てください")},
    "judge.tuple": {
        "en": "with return_outputs=False, return the loss alone",
        "ja": "return_outputs=False のときは損失だけを返してください"},
    "judge.shape": {
        "en": "compute_loss should return one number (a 0-d tensor) for the "
              "Trainer's .backward(), got shape {shape}: return losses.sum() "
              "/ (num_items_in_batch or len(losses))",
        "ja": "compute_loss は Trainer の .backward() のために 1 つの数 (0 "
              "次元テンソル) を返すべきですが、形状は {shape} でした: "
              "losses.sum() / (num_items_in_batch or len(losses)) を返してく"
              "ださい"},
    "judge.gradient": {
        "en": "the gradient of your loss could not be taken: {error}",
        "ja": "あなたの損失の勾配を計算できませんでした: {error}"},
    "judge.no gradient": {
        "en": "the loss has no gradient: do not detach the policy's "
              "log-probs (only the reference's are computed under no_grad)",
        "ja": "損失が勾配を持っていません。方策の対数確率を切り離さないでく"
              "ださい (no_grad の下で計算するのは参照モデルのものだけです)"},
    "judge.both": {
        "en": "with return_outputs=True, return (loss, outputs)",
        "ja": "return_outputs=True のときは (loss, outputs) を返してください"},
    "judge.both loss": {
        "en": "with return_outputs=True, the tuple's first item is the "
              "loss, the same as without (yours: {first}): evaluate() "
              "reads it",
        "ja": "return_outputs=True のとき、タプルの最初の要素は損失で、"
              "return_outputs=False のときと同じものです (あなたの値: "
              "{first})。evaluate() がこれを読みます"},
    "judge.nothing logged": {
        "en": "nothing logged: call self._remember(chosen_rewards, "
              "rejected_rewards, chosen, rejected) — the live plot and "
              "evaluate() read rewards/margins from it",
        "ja": "何もログに記録されていません: self._remember(chosen_rewards, "
              "rejected_rewards, chosen, rejected) を呼んでください。ライブ"
              "プロットと evaluate() はそこから rewards/margins を読みます"},
    "judge.missing": {
        "en": "the logs have no {name!r}: pass all four to "
              "self._remember(...)",
        "ja": "ログに {name!r} がありません: 4 つすべてを "
              "self._remember(...) に渡してください"},
    "judge.passed": {
        "en": "loss, gradient and logs {verdict} against kit's DPOTrainer",
        "ja": "損失、勾配、ログが kit の DPOTrainer と比べて {verdict}"},
}


@exercise("dpo_compute_loss", words=DPO_COMPUTE_LOSS_WORDS,
          stars=3, notebook=dpo.NOTEBOOK,
          kit_code=("kit.trainers:DPOTrainer.compute_loss",),
          answer=DPOTrainer, solution=MyDPOTrainer, method="compute_loss",
          uses=[("sequence_logps", "sequence_logps", losses.sequence_logps),
                ("dpo_loss", "dpo_loss", losses.dpo_loss)],
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          properties=[
              Unmoved("beta_written_in", rung=6),
              ValueProperty("gradient", "gradient", rung=4),
              ValueProperty("uneven_micro_batch", "4 pairs", rung=5),
              # the gradient is taken of the loss with num_items_in_batch
              ValueProperty("num_items_in_batch", lambda name: name ==
                            "gradient" or "num_items_in_batch" in name,
                            rung=5),
          ], mistakes=[
              Mistake("attention_mask_as_completion_mask",
                      AttentionMaskAsCompletionMask, rung=1),
              Mistake("policy_as_reference", PolicyAsItsOwnReference, rung=2),
              Mistake("mean_over_micro_batch", MeanOverMicroBatch, rung=5),
              Mistake("chunks_swapped", ChunksSwapped, rung=3),
              Mistake("detached_loss", DetachedLoss, rung=4),
              Mistake("per_pair_losses", PerPairLosses, rung=5),
              Mistake("divides_by_ga", DividesByGA, rung=5),
          ])
def observe_dpo_compute_loss(candidate):
    with torch.random.fork_rng(devices=[]):  # seeded here and by Trainer
        return _observe_compute_loss(candidate)


def _observe_compute_loss(candidate):
    trainer, batch = _dpo_setup(candidate)
    seen = {"loss": attempt(_compute, trainer, batch)}
    seen["logged metrics"] = _logged(trainer)
    seen["loss (num_items_in_batch=12)"] = loss = attempt(
        _compute, trainer, batch, num_items_in_batch=12)
    # an uneven micro-batch: 4 of the step's 10 pairs
    seen["loss (4 pairs, num_items_in_batch=10)"] = attempt(
        _compute, trainer, _first_pairs(batch, 4), num_items_in_batch=10)
    seen["gradient"] = attempt(_gradient, trainer.model, loss)
    seen["return_outputs=True"] = attempt(_compute, trainer, batch,
                                          return_outputs=True)
    # a second β: an answer with the first one written in (notebook 03
    # trains with β = 1) differs here
    trainer.args.beta = 0.1
    seen["loss (beta=0.1)"] = attempt(_compute, trainer, batch)
    return seen


def _judge(seen, expected):
    for name in ("loss", "loss (num_items_in_batch=12)",
                 "loss (4 pairs, num_items_in_batch=10)", "loss (beta=0.1)"):
        loss = seen[name]
        if isinstance(loss, tuple):
            raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.tuple"]))
        if isinstance(loss, torch.Tensor) and loss.dim() > 0:
            raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.shape"],
                                shape=tuple(loss.shape)))
        verdict = compare(name, loss, expected[name])
    if isinstance(seen["gradient"], Raised):
        raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.gradient"],
                            error=describe_error(seen["gradient"].error)))
    if seen["gradient"] is None:
        raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.no gradient"]))
    compare("gradient", seen["gradient"], expected["gradient"])
    both = seen["return_outputs=True"]
    if isinstance(both, Raised) or not (isinstance(both, tuple)
                                        and both[1] == 2):
        raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.both"]))
    # evaluate() reads the loss from it: the same loss, first
    if not same(both[2], expected["return_outputs=True"][2]):
        raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.both loss"],
                            first=both[2] if isinstance(both[2], str)
                            else type(both[2]).__name__))
    logged, wanted = seen["logged metrics"], expected["logged metrics"]
    if not logged:
        raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.nothing logged"]))
    for name, values in wanted.items():
        if name not in logged:
            raise Mismatch(said(DPO_COMPUTE_LOSS_WORDS["judge.missing"],
                                name=name))
        compare(f"logged {name}", logged[name], values)
    return said(DPO_COMPUTE_LOSS_WORDS["judge.passed"],
                verdict=agreement(verdict))
