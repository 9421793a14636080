"""Checkers for notebook 01 (the stock loss) and its catalogue of mistakes."""

import functools
import tempfile

import torch
import torch.nn.functional as F
from transformers import DataCollatorForSeq2Seq, Trainer, TrainingArguments

from kit import losses, recipes, tasks
from kit.checks.compare import (Mismatch, Raised, agreement, attempt, call,
                                compare, describe_error, gradient,
                                graph_leaves)
from kit.checks.core import EXERCISES, Mistake, Property, exercise, paused
from kit.checks.remedies import passes
from kit.gradients import split
from kit.i18n import said
from kit.models import tiny_model
from kit.trainers import CausalLMTrainer

NOTEBOOK = "01_stock_compute_loss"

# ------------------------------------------------------------ causal_lm_loss
# Each mistake is a wrong answer written as a learner writes it.


def not_shifted(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                           ignore_index=-100)


def shifted_wrong_way(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, 1:].reshape(-1, V),
                           labels[:, :-1].reshape(-1), ignore_index=-100)


def rolled(logits, labels):
    labels = torch.roll(labels, -1, dims=1)  # every label one step left
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                           ignore_index=-100)


def minus_100_counted(logits, labels):
    logprobs = logits[:, :-1].log_softmax(-1)  # (B, T-1, V)
    mask = (labels[:, 1:] != -100).float()
    targets = labels[:, 1:].clamp(min=0)  # -100 would not index
    token = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -(token * mask).sum() / mask.numel()  # every position counted


def unreduced_mean(logits, labels):
    V = logits.shape[-1]
    per_token = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                                labels[:, 1:].reshape(-1), ignore_index=-100,
                                reduction="none")  # 0 where the label is -100
    return per_token.mean()  # ... and those zeros count


def per_sequence_mean(logits, labels):
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2),
                                labels[:, 1:], reduction="none")  # (B, T-1)
    mask = (labels[:, 1:] != -100).float()
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


def sum_not_divided(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V),
                           labels[:, 1:].reshape(-1), ignore_index=-100,
                           reduction="sum")


def minus_100_as_token_0(logits, labels):
    targets = labels[:, 1:].clamp(min=0)  # -100 becomes token 0
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), targets.reshape(-1))


def detached_loss(logits, labels):
    with torch.no_grad():  # or .detach(), .item(): the gradient is cut
        return losses.causal_lm_loss(logits, labels)


# The cases vary what the loss must respect: batch, length, vocabulary, and
# rows with their own prompt and padding lengths, so that token counts differ
# (a per-row mean or a divided-by-the-wrong-count shows as a different
# factor in each case, not one constant). The last has rows with no prompt:
# a labelled first position, which no position predicts (a shift by
# torch.roll wraps it around to the end; a count of the unshifted labels
# counts it). In the last two every row has as many labelled tokens (a mean
# per row is right there), in the very last just one (so is a division by
# the number of rows).
CASES = [(3, 7, 11, [3, 2, 4], [0, 2, 0]), (2, 9, 5, [1, 4], [3, 0]),
         (4, 6, 13, [2, 2, 3, 1], [0, 1, 0, 2]),
         (3, 8, 7, [0, 2, 0], [0, 0, 2]), (2, 6, 9, [2, 2], [0, 0]),
         (3, 5, 7, [3, 3, 3], [1, 1, 1])]


def _lm_case(seed, batch, length, vocab, prompts, padding):
    """Random logits (with a gradient) and labels with masked prompts and
    padding."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=g)
    labels = torch.randint(0, vocab, (batch, length), generator=g)
    for row, (prompt, pad) in enumerate(zip(prompts, padding)):
        labels[row, :prompt] = -100  # the prompt
        labels[row, length - pad:] = -100  # padding after a shorter answer
    return logits.requires_grad_(), labels


# The printed solution, the notebook's to the letter (a test holds
# it): kit.losses' version says more than an exercise cell does.
def causal_lm_loss(logits, labels):
    """Mean next-token cross-entropy over labelled tokens. Shape: ()."""
    logits = logits[:, :-1, :]  # (B, T-1, V): position t predicts t+1
    labels = labels[:, 1:]  # (B, T-1)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           labels.reshape(-1), ignore_index=-100)


# What causal_lm_loss's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint).
CAUSAL_LM_LOSS_WORDS = {
    "hints": {
        "en": ["Position t predicts token t+1: drop the last position of the "
               "logits and the first of the labels.",
               "F.cross_entropy wants (N, V) scores and (N,) targets: "
               "flatten both with .reshape(-1, V) and .reshape(-1).",
               "Leave -100 in the labels: ignore_index=-100 skips prompt and "
               "padding, and the default reduction='mean' takes one mean "
               "over the labelled tokens of the whole batch (not per row, "
               "not a sum).",
               "The Trainer calls .backward() on your loss: keep it "
               "attached to the logits, with no .detach(), .item() or "
               "torch.no_grad()."],
        "ja": ["位置 t はトークン t+1 を予測します。ロジットの最後の位置とラ"
               "ベルの最初の位置を落としてください。",
               "F.cross_entropy は (N, V) のスコアと (N,) のターゲットを受け"
               "取ります。両方を .reshape(-1, V) と .reshape(-1) で平らにして"
               "ください。",
               "ラベルの -100 はそのままにします: ignore_index=-100 がプロン"
               "プトとパディングを飛ばし、既定の reduction='mean' がバッチ全"
               "体のラベル付きトークンで 1 つの平均を取ります (行ごとでも合計"
               "でもありません)。",
               "Trainer はあなたの損失に .backward() を呼びます: "
               ".detach(), .item() や torch.no_grad() を使わず、ロジットに"
               "つながったままにしてください。"]},
    "not_shifted": {
        "en": ("not shifted",
               "position t must predict token t+1, so drop the last logit "
               "and the first label",
               "compare logits[:, :-1] with labels[:, 1:]"),
        "ja": ("ずらしていない",
               "位置 t はトークン t+1 を予測するので、最後のロジットと最初の"
               "ラベルを落とします",
               "logits[:, :-1] と labels[:, 1:] を比べてください")},
    "shifted_wrong_way": {
        "en": ("shifted the wrong way",
               "logits[:, 1:] against labels[:, :-1] asks each position for "
               "the token *before* it",
               "drop the *last* logit and the *first* label: logits[:, "
               ":-1], labels[:, 1:]"),
        "ja": ("逆向きにずらした",
               "logits[:, 1:] と labels[:, :-1] では、各位置に *前の* トーク"
               "ンを予測させることになります",
               "*最後の* ロジットと *最初の* ラベルを落とします: logits[:, "
               ":-1], labels[:, 1:]")},
    "rolled": {
        "en": ("shifted with torch.roll",
               "torch.roll wraps each row's first label around to its last "
               "position, which is then asked for the row's first token: "
               "wrong wherever that token is labelled (no prompt)",
               "slice instead of rolling: logits[:, :-1] against labels[:, "
               "1:]"),
        "ja": ("torch.roll でずらした",
               "torch.roll は各行の最初のラベルを最後の位置へ回り込ませ、その"
               "位置に行の最初のトークンを予測させます。そのトークンにラベルが"
               "ある (プロンプトがない) 行で違います",
               "回さずにスライスします: logits[:, :-1] と labels[:, 1:] を比"
               "べてください")},
    "minus_100_counted": {
        "en": ("-100 counted",
               "prompt and padding positions count in the mean, so the loss "
               "is too small",
               "average over labelled tokens only: ignore_index=-100 does it"),
        "ja": ("-100 を数えた",
               "プロンプトとパディングの位置が平均に入り、損失が小さくなりす"
               "ぎます",
               "ラベル付きトークンだけで平均します: ignore_index=-100 がそ"
               "うします")},
    "unreduced_mean": {
        "en": ("a mean over every position",
               "with reduction='none' (or 'sum'), F.cross_entropy leaves a "
               "0 at each -100 position, and dividing by every position "
               "counts those zeros, so the loss is too small",
               "keep F.cross_entropy's default reduction='mean' (it divides "
               "by the labelled tokens only), or divide the sum by "
               "(labels[:, 1:] != -100).sum()"),
        "ja": ("すべての位置での平均",
               "reduction='none' (または 'sum') の F.cross_entropy は -100 "
               "の位置に 0 を残し、すべての位置の数で割るとその 0 も数えるので、"
               "損失が小さくなりすぎます",
               "F.cross_entropy の既定の reduction='mean' のままにするか "
               "(ラベル付きトークンの数だけで割ります)、合計を "
               "(labels[:, 1:] != -100).sum() で割ってください")},
    "minus_100_as_token_0": {
        "en": ("-100 read as token 0",
               "replacing -100 by 0 makes every prompt and padding position "
               "a target (token 0), and they count in the mean",
               "leave -100 in the labels: F.cross_entropy skips it "
               "(ignore_index=-100)"),
        "ja": ("-100 をトークン 0 として読んだ",
               "-100 を 0 に置き換えると、プロンプトとパディングのすべての位"
               "置がターゲット (トークン 0) になり、平均に入ります",
               "ラベルの -100 はそのままにします: F.cross_entropy が飛ばし"
               "ます (ignore_index=-100)")},
    "per_sequence_mean": {
        "en": ("per-sequence mean",
               "a mean per row, then over rows, gives a short answer's "
               "tokens more weight than a long one's",
               "one mean over all labelled tokens of the batch: flatten "
               "first, then F.cross_entropy"),
        "ja": ("系列ごとの平均",
               "行ごとに平均してから行で平均すると、短い補完のトークンが長い"
               "補完のトークンより重くなります",
               "バッチのラベル付きトークン全体で 1 つの平均を取ります。先に"
               "平らにしてから F.cross_entropy")},
    "sum_not_divided": {
        "en": ("sum without dividing",
               "a sum grows with the number of tokens: the loss should be a "
               "mean",
               "keep F.cross_entropy's default reduction='mean'"),
        "ja": ("割らずに合計",
               "合計はトークン数とともに大きくなります。損失は平均であるべき"
               "です",
               "F.cross_entropy の既定の reduction='mean' のままにしてくだ"
               "さい")},
    "detached": {
        "en": ("detached loss",
               "the loss carries no gradient (.detach(), .item() or "
               "torch.no_grad()), so training stops with 'element 0 of "
               "tensors does not require grad'",
               "return the tensor F.cross_entropy gives, with autograd on"),
        "ja": ("切り離された損失",
               "損失が勾配を持っていません (.detach(), .item() や "
               "torch.no_grad()) ので、学習は `element 0 of tensors does not "
               "require grad` で止まります",
               "autograd を有効にしたまま、F.cross_entropy が返すテンソルを"
               "返してください")},
    "property:labelled_first_position": {
        "en": ("a labelled first position",
               "right where every row starts with a prompt, wrong in case 3, "
               "where a row's first token is labelled: no position predicts "
               "the first token, so it is never a target"),
        "ja": ("最初の位置のラベル",
               "どの行もプロンプトで始まる場合は正しく、行の最初のトークンに"
               "ラベルがあるケース 3 で違います。最初のトークンを予測する位置"
               "はないので、それがターゲットになることはありません")},
    "property:rows_of_different_lengths": {
        "en": ("rows of different lengths",
               "right in cases 4 and 5, where every row has as many labelled "
               "tokens, wrong where the rows' counts differ: the loss is one "
               "mean over the labelled tokens of the whole batch"),
        "ja": ("長さの違う行",
               "どの行もラベル付きトークンの数が同じケース 4 と 5 では正しく、"
               "数が行ごとに違うと違います。損失はバッチ全体のラベル付きトーク"
               "ンでの 1 つの平均です")},
    "property:several_tokens_a_row": {
        "en": ("several labelled tokens a row",
               "right in case 5, where each row has one labelled token, "
               "wrong where rows have more: divide by the number of labelled "
               "tokens, not by the number of rows"),
        "ja": ("1 行に複数のラベル付きトークン",
               "各行のラベル付きトークンが 1 つのケース 5 では正しく、それより"
               "多いと違います。行の数ではなく、ラベル付きトークンの数で割りま"
               "す")},
}


@exercise("causal_lm_loss", words=CAUSAL_LM_LOSS_WORDS,
          solution=causal_lm_loss,
          stars=1, notebook=NOTEBOOK,
          kit_code=("kit.losses:causal_lm_loss",),
          answer=losses.causal_lm_loss, symptoms={"crash": 2}, properties=[
              Property("labelled_first_position", "(case 3)", rung=1),
              Property("rows_of_different_lengths", lambda name: not any(
                  case in name for case in ("(case 4)", "(case 5)")), rung=3),
              Property("several_tokens_a_row",
                       lambda name: "(case 5)" not in name, rung=3),
          ], mistakes=[
              Mistake("not_shifted", not_shifted, rung=1),
              Mistake("shifted_wrong_way", shifted_wrong_way, rung=1),
              Mistake("rolled", rolled, rung=1),
              # "ignore_index=-100 does it": not where it is in effect
              Mistake("minus_100_counted", minus_100_counted, rung=3,
                      remedy=passes(("cross_entropy", "nll_loss"),
                                    "ignore_index", -100, default=True)),
              Mistake("unreduced_mean", unreduced_mean, rung=3,
                      remedy=passes("cross_entropy", "reduction", "mean",
                                    default=True)),
              Mistake("minus_100_as_token_0", minus_100_as_token_0, rung=3),
              Mistake("per_sequence_mean", per_sequence_mean, rung=3),
              Mistake("sum_not_divided", sum_not_divided, rung=3,
                      remedy=passes("cross_entropy", "reduction", "mean",
                                    default=True)),
              Mistake("detached", detached_loss, rung=4),
          ])
def observe_causal_lm_loss(candidate):
    seen = {}
    for seed, case in enumerate(CASES):
        logits, labels = _lm_case(seed, *case)
        loss = attempt(call, candidate, dict(logits=logits, labels=labels))
        seen[f"loss (case {seed})"] = loss
        # call() hands the learner copies: take the gradient with respect
        # to the logits it actually used, found through the graph
        seen[f"gradient (case {seed})"] = attempt(_gradient_to_logits, loss)
    return seen


def _gradient_to_logits(loss):
    """d loss / d logits: call() handed the learner a copy of the logits,
    so the gradient is taken through the loss's own graph."""
    return gradient(loss, graph_leaves(loss))


# ------------------------------------------------------------- compute_loss
# The mistakes call the kit's causal_lm_loss: only the override is wrong.


class AlwaysTuple(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        return losses.causal_lm_loss(outputs.logits, labels), outputs


class IgnoresReturnOutputs(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        return losses.causal_lm_loss(outputs.logits, labels)


class DividesByNone(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        V = outputs.logits.shape[-1]
        loss = F.cross_entropy(outputs.logits[:, :-1].reshape(-1, V),
                               labels[:, 1:].reshape(-1), reduction="sum")
        loss = loss / num_items_in_batch
        return (loss, outputs) if return_outputs else loss


class DetachedLoss(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        with torch.no_grad():  # or loss.detach(): no gradient to the model
            outputs = model(**inputs)
        loss = losses.causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


class DividesByGATooo(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        if num_items_in_batch is None:
            loss = losses.causal_lm_loss(outputs.logits, labels)
        else:  # num_items_in_batch already spans every micro-batch
            loss = losses.causal_lm_loss(outputs.logits, labels,
                                         num_items_in_batch * self.args
                                         .gradient_accumulation_steps)
        return (loss, outputs) if return_outputs else loss


class DividesByGAWhenNone(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = losses.causal_lm_loss(outputs.logits, labels,
                                     num_items_in_batch)
        if num_items_in_batch is None:  # "then the Trainer does not scale"
            loss = loss / self.args.gradient_accumulation_steps
        return (loss, outputs) if return_outputs else loss


class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


causal_lm_loss = losses.causal_lm_loss  # what MyTrainer calls, here


@functools.cache
def _batch():
    """Four rows of the SFT task, collated: prompts of several lengths."""
    tokenizer = tasks.make_tokenizer()
    rows = tasks.sft_dataset("train", n=4, seed=7).map(
        recipes.sft_features(tokenizer),
        remove_columns=["prompt", "completion"])
    return tokenizer, dict(DataCollatorForSeq2Seq(tokenizer, padding=True)(
        list(rows)))


@paused()
def _trainer(trainer_class, model, accumulation=1):
    tokenizer, _ = _batch()
    args = TrainingArguments(tempfile.mkdtemp(), report_to="none",
                             use_cpu=True, disable_tqdm=True,
                             gradient_accumulation_steps=accumulation)
    return trainer_class(model=model, args=args, processing_class=tokenizer)


def _returned(returned):
    """What compute_loss returned, reduced to what the Trainer relies on
    (the loss keeps its graph: check() sees whether it has a gradient)."""
    if isinstance(returned, tuple):
        outputs = returned[1] if len(returned) > 1 else None
        return ("tuple", len(returned), _returned(returned[0]),
                getattr(outputs, "logits", None) is not None)
    return returned


SPLIT = [1, 3]  # rows per micro-batch: uneven, as an epoch's last batch is


def _given(name):
    """Whether the observation `name` was made with num_items_in_batch."""
    return "num_items_in_batch=None" not in name and any(
        part in name for part in ("num_items", "gradient_acc"))


# What compute_loss's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint), its judge's lines.
COMPUTE_LOSS_WORDS = {
    "hints": {
        "en": ["Take the labels out of `inputs` (inputs.pop('labels')), run "
               "model(**inputs) and give outputs.logits to your loss.",
               "Return just the loss, or (loss, outputs) when return_outputs "
               "is True: evaluate() asks for both.",
               "num_items_in_batch counts the labelled tokens: of the whole "
               "accumulated batch in training, of the one batch in "
               "evaluation, or None (a model whose forward takes no "
               "**kwargs, a call of your own). A mean may ignore it; a sum "
               "is divided by it, only when it is given, and by nothing "
               "else (in training it already spans every micro-batch, and "
               "when it is None the Trainer divides by the accumulation "
               "steps itself).",
               "The Trainer calls .backward() on the loss: compute it with "
               "autograd on, no .detach(), .item() or torch.no_grad()."],
        "ja": ["`inputs` からラベルを取り出し "
               "(inputs.pop('labels'))、model(**inputs) を実行して "
               "outputs.logits をあなたの損失に渡してください。",
               "損失だけを返すか、return_outputs が True のときは (loss, "
               "outputs) を返します: evaluate() は両方を求めます。",
               "num_items_in_batch はラベル付きトークンの数です。学習では勾配"
               "累積したバッチ全体の、評価ではその 1 つのバッチの数で、None "
               "のこともあります (forward が **kwargs を受け取らないモデル、"
               "あなた自身の呼び出し)。平均なら無視してかまいません。合計は、"
               "与えられたときだけそれで割り、ほかの数では割りません (学習で"
               "はすでにすべてのマイクロバッチにわたり、None のときは Trainer "
               "が自分で勾配累積のステップ数で割ります)。",
               "Trainer は損失に .backward() を呼びます: autograd を有効に"
               "したまま計算し、.detach(), .item() や torch.no_grad() は使"
               "わないでください。"]},
    "always_tuple": {
        "en": ("always a tuple",
               "training calls compute_loss with return_outputs=False and "
               "wants the loss alone",
               "return (loss, outputs) if return_outputs else loss"),
        "ja": ("いつもタプル",
               "学習は return_outputs=False で compute_loss を呼び、損失だけ"
               "を求めます",
               "return (loss, outputs) if return_outputs else loss")},
    "ignores_return_outputs": {
        "en": ("ignores return_outputs",
               "evaluate() asks for (loss, outputs) with return_outputs=True",
               "return (loss, outputs) if return_outputs else loss"),
        "ja": ("return_outputs を無視",
               "evaluate() は return_outputs=True で (loss, outputs) を求めま"
               "す",
               "return (loss, outputs) if return_outputs else loss")},
    "divides_by_none": {
        "en": ("divides by a None num_items_in_batch",
               "num_items_in_batch is None for a model whose forward takes "
               "no **kwargs and in any call outside the Trainer (evaluation "
               "passes its batch's count)",
               "divide by num_items_in_batch only when it is given; else "
               "take the mean"),
        "ja": ("None の num_items_in_batch で割る",
               "forward が **kwargs を受け取らないモデルと、Trainer の外から"
               "のすべての呼び出しでは num_items_in_batch が None です (評価は"
               "そのバッチの数を渡します)",
               "num_items_in_batch は与えられたときだけそれで割り、そうでな"
               "ければ平均を取ってください")},
    "divides_by_ga_too": {
        "en": ("divides by the accumulation steps too",
               "num_items_in_batch already counts the tokens of every "
               "micro-batch: dividing also by gradient_accumulation_steps "
               "makes the step GA times too small",
               "divide the summed loss by num_items_in_batch alone"),
        "ja": ("勾配累積のステップ数でも割る",
               "num_items_in_batch はすでにすべてのマイクロバッチのトークンを"
               "数えています: gradient_accumulation_steps でも割ると、ステッ"
               "プが GA 分の 1 に小さくなります",
               "合計した損失を num_items_in_batch だけで割ってください")},
    "divides_by_ga_when_none": {
        "en": ("divides by the accumulation steps when None",
               "with num_items_in_batch=None the Trainer divides the loss by "
               "gradient_accumulation_steps itself: dividing here too makes "
               "each step GA times too small",
               "when num_items_in_batch is None, return the plain mean"),
        "ja": ("None のときに勾配累積のステップ数で割る",
               "num_items_in_batch=None のときは Trainer が自分で損失を "
               "gradient_accumulation_steps で割ります。ここでも割ると、各ス"
               "テップが GA 分の 1 に小さくなります",
               "num_items_in_batch が None のときは、ただの平均を返してくださ"
               "い")},
    "detached": {
        "en": ("detached loss",
               "the loss carries no gradient to the model (.detach(), "
               ".item() or torch.no_grad()), so training stops with 'element "
               "0 of tensors does not require grad'",
               "run the model and the loss with autograd on, and return the "
               "loss tensor itself"),
        "ja": ("切り離された損失",
               "損失がモデルへの勾配を持っていません (.detach(), .item() や "
               "torch.no_grad()) ので、学習は `element 0 of tensors does not "
               "require grad` で止まります",
               "autograd を有効にしたままモデルと損失を計算し、損失のテンソ"
               "ルそのものを返してください")},
    "property:gradient_accumulation": {
        "en": ("gradient accumulation",
               "right while GA = 1, wrong with GA = 2 over micro-batches of 1 "
               "and 3 rows: num_items_in_batch counts the tokens of every "
               "micro-batch, so a summed loss is divided by it and by "
               "nothing else"),
        "ja": ("勾配累積",
               "GA = 1 では正しく、1 行と 3 行のマイクロバッチで GA = 2 にする"
               "と違います: num_items_in_batch はすべてのマイクロバッチのトー"
               "クンを数えるので、合計した損失はそれだけで割ります")},
    "property:no_num_items_in_batch": {
        "en": ("num_items_in_batch=None",
               "right when num_items_in_batch is given, wrong when it is None "
               "(a model whose forward takes no **kwargs, any call outside "
               "the Trainer): then take the mean"),
        "ja": ("num_items_in_batch=None",
               "num_items_in_batch が与えられたときは正しく、None のとき ("
               "forward が **kwargs を受け取らないモデル、Trainer の外からの呼"
               "び出し) に違います。そのときは平均を取ります")},
    "property:num_items_in_batch_given": {
        "en": ("num_items_in_batch given",
               "right when num_items_in_batch is None, wrong when training "
               "gives it (GA = 1 and 2): a summed loss is divided by it, and "
               "by nothing else"),
        "ja": ("num_items_in_batch が与えられたとき",
               "num_items_in_batch が None のときは正しく、学習がそれを与える"
               "と (GA = 1 と 2) 違います。合計した損失はそれだけで割ります")},
    "property:return_outputs": {
        "en": ("return_outputs=True",
               "right when training asks for the loss alone, wrong when "
               "evaluate() asks for (loss, outputs) with return_outputs=True"),
        "ja": ("return_outputs=True",
               "学習が損失だけを求めるときは正しく、evaluate() が "
               "return_outputs=True で (loss, outputs) を求めるときに違いま"
               "す")},
    "judge.init": {
        "en": "{name}(model=..., args=..., processing_class=...) raised "
              "{error}: its __init__ must take the Trainer's arguments",
        "ja": "{name}(model=..., args=..., processing_class=...) が {error} "
              "を送出しました: __init__ は Trainer の引数を受け取る必要があ"
              "ります"},
    "judge.passed": {
        "en": "{verdict} against the model's own loss",
        "ja": "{verdict} (モデル自身の損失と比較)"},
    "judge.ahead": {
        "en": "{verdict}, and it honours num_items_in_batch: a step ahead of "
              "this exercise",
        "ja": "{verdict}。さらに num_items_in_batch にも従っています。この演"
              "習の一歩先です"},
    "judge.tuple": {
        "en": "with return_outputs=False, return the loss alone, not a tuple "
              "({name})",
        "ja": "return_outputs=False のときは、タプルではなく損失だけを返して"
              "ください ({name})"},
    "judge.both": {
        "en": "with return_outputs=True, return (loss, outputs)",
        "ja": "return_outputs=True のときは (loss, outputs) を返してください"},
    "judge.outputs": {
        "en": "the second item should be the model's outputs, with .logits",
        "ja": "2 番目の要素は .logits を持つモデルの出力であるべきです"},
}


@exercise("compute_loss", words=COMPUTE_LOSS_WORDS,
          stars=2, notebook=NOTEBOOK, answer=MyTrainer,
          kit_code=("kit.trainers:CausalLMTrainer.compute_loss",),
          solution=MyTrainer, method="compute_loss",
          uses=[("causal_lm_loss", "causal_lm_loss", losses.causal_lm_loss)],
          symptoms={"crash": 1}, also_right=(CausalLMTrainer,), properties=[
              Property("return_outputs", "return_outputs=True", rung=2),
              Property("gradient_accumulation", "gradient_accumulation_steps",
                       rung=3),
              Property("no_num_items_in_batch", lambda name: not _given(
                  name), rung=3),
              Property("num_items_in_batch_given", _given, rung=3),
          ], mistakes=[
              Mistake("always_tuple", AlwaysTuple, rung=2),
              Mistake("ignores_return_outputs", IgnoresReturnOutputs, rung=2),
              Mistake("divides_by_none", DividesByNone, rung=3),
              Mistake("divides_by_ga_too", DividesByGATooo, rung=3),
              Mistake("divides_by_ga_when_none", DividesByGAWhenNone,
                      rung=3),
              Mistake("detached", DetachedLoss, rung=4),
          ], judge=lambda candidate, seen, expected: _judge_compute_loss(
              seen, expected))
def observe_compute_loss(candidate):
    """The loss under GA = 1 (with and without num_items_in_batch), its
    gradient, return_outputs=True, then GA = 2 over uneven micro-batches,
    and GA = 2 without num_items_in_batch (the Trainer divides by GA then,
    so the loss is the plain mean)."""
    _, batch = _batch()
    with paused():
        model = tiny_model("cpu", seed=0, tokenizer=_batch()[0])
    trainer = attempt(_trainer, candidate, model)
    if isinstance(trainer, Raised):
        raise Mismatch(said(COMPUTE_LOSS_WORDS["judge.init"],
                            name=candidate.__name__,
                            error=describe_error(trainer.error)),
                       symptom="crash")
    tokens = int((batch["labels"][:, 1:] != -100).sum())
    loss = _returned(attempt(trainer.compute_loss, model, dict(batch)))
    seen = {"loss": loss,
            "gradient": attempt(gradient, loss, list(model.parameters())),
            "loss with num_items_in_batch": _returned(attempt(
                trainer.compute_loss, model, dict(batch),
                num_items_in_batch=tokens))}
    accumulating = _trainer(candidate, model, accumulation=len(SPLIT))
    micro, num_items = accumulating.get_batch_samples(
        iter(split(batch, SPLIT)), len(SPLIT), "cpu")
    for rows, part in zip(SPLIT, micro):
        name = (f"loss under gradient_accumulation_steps={len(SPLIT)} "
                f"(micro-batch of {rows} of {sum(SPLIT)} rows)")
        seen[name] = _returned(attempt(
            accumulating.compute_loss, model, dict(part),
            num_items_in_batch=num_items))
    seen[f"loss under gradient_accumulation_steps={len(SPLIT)} "
         "(num_items_in_batch=None)"] = _returned(attempt(
             accumulating.compute_loss, model, dict(batch)))
    seen["return_outputs=True"] = _returned(attempt(
        trainer.compute_loss, model, dict(batch), return_outputs=True))
    return seen


def _judge_compute_loss(seen, expected):
    """Right if it behaves as the mean loss (the notebook's MyTrainer) or as
    the sum divided by num_items_in_batch (a step ahead: CausalLMTrainer)."""
    try:
        return said(COMPUTE_LOSS_WORDS["judge.passed"],
                    verdict=agreement(_against(seen, expected)))
    except Mismatch as as_a_mean:
        with paused():
            ahead = EXERCISES["compute_loss"].seen(CausalLMTrainer)
        try:
            verdict = _against(seen, ahead)
        except Mismatch as as_a_sum:
            # say what is wrong with the version it got further with
            raise max(as_a_mean, as_a_sum, key=lambda m: m.checked)
        return said(COMPUTE_LOSS_WORDS["judge.ahead"],
                    verdict=agreement(verdict))


def _against(seen, wanted):
    verdict, checked = "exact", 0
    try:
        for name, value in seen.items():
            if name == "return_outputs=True":
                _judge_both(value, wanted["loss"])
            elif isinstance(value, tuple):
                raise Mismatch(said(COMPUTE_LOSS_WORDS["judge.tuple"],
                                    name=name))
            else:
                found = compare(name, value, wanted[name])
                verdict = found if verdict == "exact" else verdict
            checked += 1
    except Mismatch as wrong:
        wrong.checked = checked
        raise
    return verdict


def _judge_both(both, wanted):
    if isinstance(both, Raised):
        compare("loss (return_outputs=True)", both, wanted)
    if not (isinstance(both, tuple) and both[1] == 2):
        raise Mismatch(said(COMPUTE_LOSS_WORDS["judge.both"]))
    if not both[3]:
        raise Mismatch(said(COMPUTE_LOSS_WORDS["judge.outputs"]))
    compare("loss (return_outputs=True)", both[2], wanted)
