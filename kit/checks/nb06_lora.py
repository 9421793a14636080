"""Checker for notebook 06's ★: DPO's reference from a LoRA policy, its
adapter off (peft), instead of a second copy of the model."""

import contextlib
import tempfile

import torch

from kit import tasks
from kit.checks.compare import (Mismatch, Raised, attempt, default_judge,
                                describe_error)
from kit.checks.core import Mistake, exercise, paused
from kit.checks.messages import MESSAGES
from kit.i18n import said, text
from kit.models import load_policy
from kit.trainers import DPOConfig, DPOTrainer

NOTEBOOK = "06_scale_up"


class MyLoRADPOTrainer(DPOTrainer):
    @contextlib.contextmanager
    def reference(self, model):
        """The model to run for the reference: this policy, adapter off."""
        with self.accelerator.unwrap_model(model).disable_adapter():
            yield model


class AdapterOn(DPOTrainer):
    @contextlib.contextmanager
    def reference(self, model):
        yield model  # the policy as it is: its adapter still on


class AdapterLeftOff(DPOTrainer):
    @contextlib.contextmanager
    def reference(self, model):
        policy = self.accelerator.unwrap_model(model)
        policy.base_model.disable_adapter_layers()
        yield model  # and never turned back on


@paused()
def _lora_trainer(trainer_class):
    """A DPO trainer of `trainer_class` on the toy model with LoRA (r = 4
    on q_proj, v_proj), moved off its base, and no ref_model."""
    try:
        import peft
    except ImportError:
        raise Mismatch(said(LORA_REFERENCE_WORDS["no peft"])) from None
    model, tokenizer = load_policy(preset="cpu")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # LoRA's A starts random: the same each time
        policy = peft.get_peft_model(model, peft.LoraConfig(
            r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
            lora_dropout=0.0))
        with torch.no_grad():
            for name, weight in policy.named_parameters():
                if "lora_B" in name:  # 0 at first: the policy is its base
                    weight.add_(0.05 * torch.randn_like(weight))
    args = DPOConfig(tempfile.mkdtemp(), beta=0.5, report_to="none",
                     use_cpu=True, disable_tqdm=True, save_strategy="no",
                     per_device_train_batch_size=8)
    return trainer_class(model=policy, ref_model=None, args=args,
                         train_dataset=tasks.preference_dataset("train", n=8),
                         processing_class=tokenizer)


def _step(trainer, batch):
    """One batch's loss and the adapter's gradient, as training runs it."""
    model = trainer.model
    model.zero_grad()
    loss = trainer.compute_loss(model, batch)
    if loss.requires_grad:  # not when the adapter was left off: nothing trains
        loss.backward()
    gradient = torch.cat([  # every adapter weight's, 0 where none reached
        (torch.zeros_like(w) if w.grad is None else w.grad).flatten()
        for name, w in model.named_parameters() if "lora_" in name])
    model.zero_grad()
    return loss.detach(), gradient


# What lora_reference's checker says, English beside Japanese: its hint
# ladder (gentlest first), each mistake's (title, why, hint), its lines.
LORA_REFERENCE_WORDS = {
    "hints": {
        "en": ["The reference is the policy as it started. A LoRA policy's "
               "base weights never train: with its adapter off it is that "
               "start, so no second model is needed.",
               "peft's model has a context manager for it: inside `with "
               "model.disable_adapter():` the adapter is off, and on again "
               "when the block ends. Yield the model inside that block.",
               "Unwrap it first (self.accelerator.unwrap_model(model)): the "
               "Trainer may have wrapped the policy for several processes."],
        "ja": ["参照モデルは学習を始めたときの方策です。LoRA の方策ではベース"
               "の重みは学習されないので、アダプターを外せばその出発点になり"
               "ます。2 つ目のモデルは要りません。",
               "peft のモデルにはそのためのコンテキストマネージャーがあります"
               "。`with model.disable_adapter():` の中ではアダプターが外れ、"
               "ブロックを抜けると元に戻ります。そのブロックの中で model を "
               "yield してください。",
               "先にラップを外してください（self.accelerator.unwrap_model"
               "(model)）。複数プロセスのために Trainer が方策をラップして"
               "いることがあります。"]},
    "adapter_left_on": {
        "en": ("reference with the adapter on",
               "the reference is then the policy itself: every log-ratio is "
               "0, the loss stays at log 2 = 0.693 and the reference moves "
               "with the policy",
               "yield the model inside `with model.disable_adapter():`"),
        "ja": ("アダプターを付けたままの参照モデル",
               "参照モデルが方策そのものになります。対数比はすべて 0 で、損失"
               "は log 2 = 0.693 のまま動かず、参照モデルも方策と一緒に動き"
               "ます",
               "`with model.disable_adapter():` の中で model を yield して"
               "ください")},
    "adapter_left_off": {
        "en": ("adapter never turned back on",
               "the first reference is right, but the policy then trains and "
               "runs without its adapter: the next batch's loss is log 2",
               "use the context manager `with model.disable_adapter():`, "
               "which turns the adapter back on when the block ends"),
        "ja": ("アダプターを戻していない",
               "最初の参照モデルは正しいものの、その後の方策はアダプターなしで"
               "学習し実行されます。次のバッチの損失は log 2 になります",
               "ブロックを抜けるとアダプターを元に戻すコンテキストマネージャー "
               "`with model.disable_adapter():` を使ってください")},
    "no peft": {
        "en": "peft is not installed, so there is no LoRA policy to check "
              "with: pip install peft (or the kit's [peft] extra), then run "
              "this cell again",
        "ja": "peft がインストールされていないため、確かめる LoRA の方策が"
              "ありません。`pip install peft`（または kit の [peft] "
              "extra）を実行してから、このセルをもう一度実行してください"},
}


@exercise("lora_reference", stars=1, notebook=NOTEBOOK,
          words=LORA_REFERENCE_WORDS, answer=DPOTrainer,
          solution=MyLoRADPOTrainer,
          method="reference", kit_code=("kit.trainers:DPOTrainer.reference",),
          judge=lambda candidate, seen, expected: _judge(candidate, seen,
                                                         expected),
          mistakes=[Mistake("adapter_left_on", AdapterOn, rung=1),
                    Mistake("adapter_left_off", AdapterLeftOff, rung=2)])
def observe_lora_reference(candidate):
    trainer = _lora_trainer(candidate)
    batch = next(iter(trainer.get_train_dataloader()))

    def facts():
        loss, gradient = _step(trainer, batch)
        again, _ = _step(trainer, batch)  # the adapter back on after?
        return {"loss": loss, "the adapter's gradient": gradient,
                "the loss of the next batch, adapter on again": again}
    return attempt(facts)


def _judge(candidate, seen, expected):
    if isinstance(seen, Raised):  # the learner's reference() raised
        raise Mismatch(text(MESSAGES, "facts.raised", what="reference()",
                            error=describe_error(seen.error)))
    return default_judge(candidate, seen, expected)
