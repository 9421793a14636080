"""Checkers for notebook 03's functions; `dpo_trainer.py` has the override."""

import itertools

import torch
import torch.nn.functional as F

from kit import losses
from kit.checks.compare import (Mismatch, Raised, agreement, attempt, call,
                                compare, describe_error, same)
from kit.checks.core import Mistake, Property, exercise
from kit.checks.messages import MESSAGES
from kit.i18n import said, text
from kit.losses import published_snippet

NOTEBOOK = "03_dpo_compute_loss"


# --------------------------------------------------------- sequence_logps

def sequence_logps(logits, input_ids, completion_mask):
    """Summed log-probs of the completion tokens. Shape: (B,)."""
    logprobs = logits[:, :-1, :].log_softmax(-1)  # (B, T-1, V)
    targets = input_ids[:, 1:]  # (B, T-1)
    token_logps = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (token_logps * completion_mask[:, 1:]).sum(-1)  # (B,)


def logps_not_shifted(logits, input_ids, completion_mask):
    logprobs = logits.log_softmax(-1)
    token = logprobs.gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    return (token * completion_mask).sum(-1)


def logps_prompt_included(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    token = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return token.sum(-1)  # every position: prompt and padding too


def logps_mean(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    token = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = completion_mask[:, 1:]
    return (token * mask).sum(-1) / mask.sum(-1)


def logps_mask_not_shifted(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    token = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (token * completion_mask[:, :-1]).sum(-1)


def logps_log_of_product(logits, input_ids, completion_mask):
    probs = logits[:, :-1].softmax(-1)
    token = probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = completion_mask[:, 1:]
    return torch.log(torch.where(mask.bool(), token, 1.0).prod(-1))


def logps_detached(logits, input_ids, completion_mask):
    with torch.no_grad():
        return losses.sequence_logps(logits, input_ids, completion_mask)


def _logps_case(seed, sizes=(2, 5, 3, 4), length=9, vocab=13, prompt=4):
    """Random logits over a prompt of `prompt` tokens, completions of
    `sizes` tokens, padding after them."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(len(sizes), length, vocab, generator=g)
    input_ids = torch.randint(0, vocab, (len(sizes), length), generator=g)
    completion_mask = torch.zeros(len(sizes), length, dtype=torch.long)
    for row, size in enumerate(sizes):
        completion_mask[row, prompt:prompt + size] = 1
    return logits, input_ids, completion_mask


# Short completions, and long ones: 60 tokens of probability ~0.05 multiply
# to ~1e-78, which float32 rounds to 0 (log: -inf). Sums of logs do not.
# Completions from position 0 (an empty prompt): no position predicts the
# first token, and a shift by torch.roll wraps it around to the end.
# Completions of one length: a mean rescaled by some length is right there.
LOGPS_CASES = {"case 0": dict(seed=0), "case 1": dict(seed=1),
               "long completions": dict(seed=2, sizes=(90, 60, 75, 40),
                                        length=100),
               "completions from position 0": dict(seed=3, prompt=0),
               "completions of one length": dict(seed=4, sizes=(3,) * 4)}


# What sequence_logps's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint).
SEQUENCE_LOGPS_WORDS = {
    "hints": {
        "en": ["Same shift as the LM loss: logits[:, :-1] score the tokens "
               "input_ids[:, 1:], and the mask follows: completion_mask[:, "
               "1:].",
               "Stay in log space: log_softmax over the vocabulary, then "
               ".gather(-1, targets.unsqueeze(-1)).squeeze(-1) picks each "
               "token's log-prob. A product of 60 probabilities underflows "
               "to 0; a sum of their logs does not.",
               "Multiply by the mask and .sum(-1): a sum, not a mean — DPO "
               "compares log-probabilities of whole sequences, and prompt "
               "and padding tokens must add nothing.",
               "Keep the graph: no .detach(), no torch.no_grad() — DPO's "
               "gradient flows through these log-probs to the policy."],
        "ja": ["言語モデルの損失と同じずらし方です: logits[:, :-1] がトークン"
               " input_ids[:, 1:] を採点し、マスクも合わせます: "
               "completion_mask[:, 1:]。",
               "対数のまま計算します。語彙について log_softmax を取り"
               "、.gather(-1, targets.unsqueeze(-1)).squeeze(-1) で各トークン"
               "の対数確率を選びます。60 個の確率の積は 0 にアンダーフローし"
               "ますが、その対数の和はしません。",
               "マスクを掛けて .sum(-1): 平均ではなく和です。DPO は系列全体の"
               "対数確率を比べ、プロンプトとパディングのトークンは何も足して"
               "はいけません。",
               "計算グラフを残します: .detach() も torch.no_grad() も使いま"
               "せん。DPO の勾配はこの対数確率を通って方策に流れます。"]},
    "not_shifted": {
        "en": ("not shifted",
               "the logits at t score token t+1, so each token was scored by "
               "its own position",
               "logits[:, :-1] against input_ids[:, 1:], and "
               "completion_mask[:, 1:]"),
        "ja": ("ずらしていない",
               "位置 t のロジットはトークン t+1 を採点するのに、各トークンを"
               "自分自身の位置で採点しました",
               "logits[:, :-1] と input_ids[:, 1:]、そして "
               "completion_mask[:, 1:]")},
    "prompt_included": {
        "en": ("prompt included",
               "without the mask the prompt's (and padding's) tokens are "
               "summed too",
               "multiply the token log-probs by completion_mask[:, 1:] "
               "before the sum"),
        "ja": ("プロンプトを含めた",
               "マスクがないと、プロンプト (とパディング) のトークンまで合計"
               "されます",
               "和を取る前に、トークンの対数確率に completion_mask[:, 1:] "
               "を掛けてください")},
    "mean_not_sum": {
        "en": ("mean instead of sum",
               "DPO compares the log-probability of whole completions: a sum "
               "over their tokens",
               "drop the division: .sum(-1) alone"),
        "ja": ("和ではなく平均",
               "DPO は補完全体の対数確率、つまりそのトークンの和を比べます",
               "割り算をやめて .sum(-1) だけにしてください")},
    "mask_not_shifted": {
        "en": ("mask not shifted",
               "the token log-probs are shifted (they score tokens 1..T-1) "
               "but the mask is not, so it is off by one",
               "shift the mask with the tokens: completion_mask[:, 1:]"),
        "ja": ("マスクをずらしていない",
               "トークンの対数確率はずれている (トークン 1..T-1 を採点する) "
               "のにマスクはずれていないので、1 つずれています",
               "マスクもトークンと一緒にずらします: completion_mask[:, 1:]")},
    "log_of_product": {
        "en": ("log of a product",
               "the probabilities of a long completion multiply to less than "
               "float32 can hold: the product is 0 and its log -inf",
               "add log-probs instead: log_softmax, gather, then "
               "(token_logps * mask).sum(-1)"),
        "ja": ("積の対数",
               "長い補完の確率を掛け合わせると float32 で表せないほど小さくな"
               "ります。積は 0、その対数は -inf です",
               "代わりに対数確率を足します: log_softmax, gather, そして "
               "(token_logps * mask).sum(-1)")},
    "detached": {
        "en": ("detached log-probs",
               "computed under torch.no_grad() (or .detach()ed), the "
               "log-probs carry no gradient: DPO could not train the policy "
               "with them",
               "drop the no_grad / .detach(): only the reference model runs "
               "without gradients, in compute_loss"),
        "ja": ("切り離された対数確率",
               "torch.no_grad() の下で計算した (または .detach() した) 対数確"
               "率は勾配を持たず、DPO はそれで方策を学習できません",
               "no_grad / .detach() をやめてください。勾配なしで実行するの"
               "は compute_loss の中の参照モデルだけです")},
    "property:completions_from_position_0": {
        "en": ("a completion from position 0",
               "right where a prompt comes first, wrong where a completion "
               "starts at position 0: no position predicts the first token, "
               "so the shifted mask, completion_mask[:, 1:], leaves it out"),
        "ja": ("位置 0 から始まる補完",
               "プロンプトが先にあるときは正しく、補完が位置 0 から始まると違"
               "います。最初のトークンを予測する位置はないので、ずらしたマスク "
               "completion_mask[:, 1:] はそれを含めません")},
    "property:long_completions": {
        "en": ("long completions",
               "right on short completions, wrong on long ones: a product "
               "of many probabilities underflows to 0 in float32, a sum of "
               "log-probs does not"),
        "ja": ("長い補完",
               "短い補完では正しく、長い補完で違います。多数の確率の積は "
               "float32 では 0 にアンダーフローしますが、対数確率の和はしま"
               "せん")},
    "property:completions_of_different_lengths": {
        "en": ("completions of different lengths",
               "right where every completion has as many tokens, wrong where "
               "they differ: a sequence's log-prob is the sum over its own "
               "tokens, with no mean and no rescaling"),
        "ja": ("長さの違う補完",
               "どの補完もトークン数が同じときは正しく、違うと違います。系列の"
               "対数確率は自分のトークンでの和で、平均も伸縮もしません")},
    "property:gradient": {
        "en": ("the gradient",
               "the values are right, but no gradient reaches the logits: "
               "DPO trains through these log-probs"),
        "ja": ("勾配",
               "値は正しいのに、勾配がロジットに届きません: DPO はこの対数確"
               "率を通して学習します")},
}


@exercise("sequence_logps", words=SEQUENCE_LOGPS_WORDS,
          stars=1, notebook=NOTEBOOK,
          kit_code=("kit.losses:sequence_logps",),
          answer=losses.sequence_logps, solution=sequence_logps, properties=[
              Property("completions_from_position_0", "position 0", rung=1),
              Property("long_completions", "long completions", rung=2),
              Property("completions_of_different_lengths", lambda name: (
                  "one length" not in name and "gradient" not in name),
                       rung=3),
              Property("gradient", "a gradient back", rung=4),
          ], mistakes=[
              Mistake("not_shifted", logps_not_shifted, rung=1),
              Mistake("prompt_included", logps_prompt_included, rung=3),
              Mistake("mean_not_sum", logps_mean, rung=3),
              Mistake("mask_not_shifted", logps_mask_not_shifted, rung=1),
              Mistake("log_of_product", logps_log_of_product, rung=2),
              Mistake("detached", logps_detached, rung=4),
          ])
def observe_sequence_logps(candidate):
    seen = {}
    for name, case in LOGPS_CASES.items():
        logits, input_ids, completion_mask = _logps_case(**case)
        seen[f"sequence log-probs ({name})"] = out = attempt(
            call, candidate, dict(logits=logits.requires_grad_(),
                                  input_ids=input_ids,
                                  completion_mask=completion_mask))
    # DPO trains through these log-probs: the gradient must reach the logits
    seen["a gradient back to the logits (no .detach(), no no_grad)"] = (
        isinstance(out, torch.Tensor) and out.requires_grad)
    return seen


# --------------------------------------------------------------- dpo_loss

def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
             ref_rejected_logps, beta=0.1):
    chosen_logratios = policy_chosen_logps - ref_chosen_logps  # (B,)
    rejected_logratios = policy_rejected_logps - ref_rejected_logps  # (B,)
    losses = -F.logsigmoid(beta * (chosen_logratios - rejected_logratios))
    chosen_rewards = beta * chosen_logratios.detach()
    rejected_rewards = beta * rejected_logratios.detach()
    return losses, chosen_rewards, rejected_rewards


def fixed_snippet(chosen_scores, rejected_scores, beta):
    return -F.logsigmoid(beta * (chosen_scores - rejected_scores))


def dpo_as_published(policy_chosen_logps, policy_rejected_logps,
                     ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (published_snippet(chosen, rejected, beta),
            beta * chosen.detach(), beta * rejected.detach())


def dpo_mean(*logps, beta=0.1):
    losses_, chosen, rejected = dpo_loss(*logps, beta=beta)
    return losses_.mean(), chosen, rejected


def dpo_rewards_attached(policy_chosen_logps, policy_rejected_logps,
                         ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (-F.logsigmoid(beta * (chosen - rejected)), beta * chosen,
            beta * rejected)


def dpo_no_reference(policy_chosen_logps, policy_rejected_logps,
                     ref_chosen_logps, ref_rejected_logps, beta=0.1):
    zero = torch.zeros_like(policy_chosen_logps)  # the reference left out
    return dpo_loss(policy_chosen_logps, policy_rejected_logps, zero, zero,
                    beta=beta)


def dpo_losses_detached(*logps, beta=0.1):
    losses_, chosen, rejected = dpo_loss(*logps, beta=beta)
    return losses_.detach(), chosen, rejected


def dpo_swapped(policy_chosen_logps, policy_rejected_logps,
                ref_chosen_logps, ref_rejected_logps, beta=0.1):
    # the wrong way round: rejected − chosen in the loss (rewards right)
    losses_, rejected, chosen = dpo_loss(
        policy_rejected_logps, policy_chosen_logps, ref_rejected_logps,
        ref_chosen_logps, beta=beta)
    return losses_, chosen, rejected


def dpo_sigmoid(policy_chosen_logps, policy_rejected_logps,
                ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (-torch.sigmoid(beta * (chosen - rejected)),
            beta * chosen.detach(), beta * rejected.detach())


def dpo_beta_written_in(policy_chosen_logps, policy_rejected_logps,
                        ref_chosen_logps, ref_rejected_logps, beta=0.1):
    return dpo_loss(policy_chosen_logps, policy_rejected_logps,
                    ref_chosen_logps, ref_rejected_logps, beta=0.1)


def dpo_no_minus(policy_chosen_logps, policy_rejected_logps,
                 ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (F.logsigmoid(beta * (chosen - rejected)),
            beta * chosen.detach(), beta * rejected.detach())


def dpo_beta_outside(policy_chosen_logps, policy_rejected_logps,
                     ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (-beta * F.logsigmoid(chosen - rejected),
            beta * chosen.detach(), beta * rejected.detach())


def snippet_beta_on_rejected(chosen_scores, rejected_scores, beta):
    return -F.logsigmoid(chosen_scores - beta * rejected_scores)


def snippet_no_minus(chosen_scores, rejected_scores, beta):
    return F.logsigmoid(beta * (chosen_scores - rejected_scores))


def _pairs(seed, batch=5):
    g = torch.Generator().manual_seed(seed)
    return [-torch.rand(batch, generator=g) * 8 for _ in range(4)]


NAMES = ("policy_chosen_logps", "policy_rejected_logps", "ref_chosen_logps",
         "ref_rejected_logps")


def _run_pair_loss(candidate, beta):
    logps = {name: t.requires_grad_() for name, t in zip(
        NAMES, _pairs(int(beta * 10)))}
    out = call(candidate, logps, beta=beta)
    if not (isinstance(out, tuple) and len(out) == 3):
        return said(DPO_LOSS_WORDS["judge.not three"],
                    kind=type(out).__name__)
    return {"losses": out[0], "chosen_rewards": out[1],
            "rejected_rewards": out[2],
            "losses keep their gradient": isinstance(
                out[0], torch.Tensor) and out[0].requires_grad,
            "rewards detached": not any(
                isinstance(r, torch.Tensor) and r.requires_grad
                for r in out[1:])}


def _reordered(out, wanted):
    """The three right tensors, returned in another order."""
    names = ("losses", "chosen_rewards", "rejected_rewards")
    return any(all(same(out[name], wanted[other])
                   for name, other in zip(names, order))
               for order in itertools.permutations(names)
               if order != names)


def _judge_pair_loss(candidate, seen, expected):
    for beta, wanted in expected.items():
        out = seen[beta]
        if isinstance(out, Raised):
            raise Mismatch(text(MESSAGES, "raised",
                                error=describe_error(out.error)))
        if not isinstance(out, dict):
            raise Mismatch(said(DPO_LOSS_WORDS["judge.three"], out=out))
        if _reordered(out, wanted):
            raise Mismatch(said(DPO_LOSS_WORDS["judge.order"]))
        for name in ("losses", "chosen_rewards", "rejected_rewards"):
            verdict = compare(f"{name} ({beta})", out[name], wanted[name])
        if not out["losses keep their gradient"]:
            raise Mismatch(said(DPO_LOSS_WORDS["judge.no gradient"]))
        if not out["rewards detached"]:
            raise Mismatch(said(DPO_LOSS_WORDS["judge.rewards"]))
    return said(DPO_LOSS_WORDS["judge.passed"], verdict=agreement(verdict))


# What dpo_loss's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint), its judge's lines.
DPO_LOSS_WORDS = {
    "hints": {
        "en": ["First the log-ratios: π_c − ref_c for chosen, π_r − ref_r "
               "for rejected — the reference is what anchors the policy.",
               "The margin is chosen minus rejected: (π_c − ref_c) − (π_r − "
               "ref_r). The other way round trains the policy to prefer the "
               "rejected answer.",
               "β multiplies the whole margin, β · (chosen − rejected) — the "
               "published snippet puts it on the chosen side only.",
               "The loss is −F.logsigmoid(β · margin): the log of σ, not σ, "
               "and a minus in front, so that minimising it widens the "
               "margin.",
               "Keep one loss per pair, shape (B,), with its gradient: no "
               ".mean() — the trainer divides by the pairs of the whole "
               "accumulated step — and no .detach() on the losses.",
               "The rewards β · log-ratio are only logged: .detach() them."],
        "ja": ["まず対数比: chosen は π_c − ref_c、rejected は π_r − ref_r。"
               "方策をつなぎ止めるのは参照モデルです。",
               "マージンは chosen から rejected を引いたもの: (π_c − ref_c) "
               "− (π_r − ref_r)。逆にすると、方策は rejected の補完を好むよう"
               "に学習します。",
               "β はマージン全体に掛けます: β · (chosen − rejected)。公開され"
               "たスニペットは chosen の側にだけ掛けています。",
               "損失は −F.logsigmoid(β · margin) です: σ ではなく σ の対数で"
               "、前にマイナスが付くので、最小化するとマージンが広がります。",
               "ペアごとに 1 つの損失、形状 (B,) を勾配付きで残します: "
               ".mean() はしません (トレーナーが勾配累積したステップ全体のペ"
               "ア数で割ります)。損失に .detach() もしません。",
               "報酬 β · log-ratio はログに記録するだけです: .detach() して"
               "ください。"]},
    "published_snippet": {
        "en": ("the published snippet",
               "β·chosen − rejected multiplies only the chosen side by β",
               "brackets: β · (chosen − rejected)"),
        "ja": ("公開されたスニペット",
               "β·chosen − rejected では chosen の側だけに β が掛かります",
               "括弧を付けます: β · (chosen − rejected)")},
    "mean_not_per_pair": {
        "en": (".mean() instead of per-pair losses",
               "the trainer sums the losses and divides by the pairs of the "
               "whole accumulated step",
               "return one loss per pair, shape (B,): no .mean()"),
        "ja": ("ペアごとの損失ではなく .mean()",
               "トレーナーは損失を合計し、勾配累積したステップ全体のペア数で"
               "割ります",
               "ペアごとに 1 つの損失、形状 (B,) を返します: .mean() はしま"
               "せん")},
    "rewards_not_detached": {
        "en": ("rewards not detached",
               "the rewards are only logged; attached, they keep the graph "
               "alive",
               "beta * chosen_logratios.detach()"),
        "ja": ("報酬を切り離していない",
               "報酬はログに記録するだけです。つながったままだと計算グラフが"
               "残り続けます",
               "beta * chosen_logratios.detach()")},
    "losses_detached": {
        "en": ("losses detached",
               "the losses are what the Trainer calls .backward() on: "
               "detached, they carry no gradient (only the rewards are for "
               "logging)",
               "return the losses as computed; .detach() only the rewards"),
        "ja": ("損失を切り離した",
               "Trainer が .backward() を呼ぶのは損失です。切り離すと勾配を持"
               "ちません (ログ用なのは報酬だけです)",
               "損失は計算したまま返し、.detach() するのは報酬だけにしてく"
               "ださい")},
    "beta_of_the_paper": {
        "en": ("β = 0.1 written in",
               "0.1, the paper's and TRL's default, is used whatever beta "
               "the caller passes",
               "use the beta argument, in the loss and the rewards"),
        "ja": ("β = 0.1 の決め打ち",
               "呼び出し側が渡す beta にかかわらず、論文と TRL の既定値 0.1 を"
               "使っています",
               "損失と報酬の両方で引数の beta を使ってください")},
    "no_reference": {
        "en": ("no reference",
               "the log-ratios are π − ref: without the reference nothing "
               "anchors the policy",
               "subtract ref_chosen_logps and ref_rejected_logps first"),
        "ja": ("参照モデルがない",
               "対数比は π − ref です。参照モデルがないと、方策をつなぎ止める"
               "ものがありません",
               "先に ref_chosen_logps と ref_rejected_logps を引いてくださ"
               "い")},
    "chosen_rejected_swapped": {
        "en": ("chosen and rejected swapped",
               "the margin is rejected minus chosen: minimising the loss "
               "then makes the rejected answer more likely",
               "chosen_logratios - rejected_logratios"),
        "ja": ("chosen と rejected が逆",
               "マージンが rejected から chosen を引いたものになっています。"
               "損失を最小化すると rejected の補完が出やすくなります",
               "chosen_logratios - rejected_logratios")},
    "sigmoid_not_logsigmoid": {
        "en": ("sigmoid for logsigmoid",
               "−σ(β·margin) is bounded and flat where the policy is most "
               "wrong: DPO's loss is −log σ",
               "-F.logsigmoid(beta * (chosen_logratios - "
               "rejected_logratios))"),
        "ja": ("logsigmoid ではなく sigmoid",
               "−σ(β·margin) は有界で、方策が最も間違っているところで平らで"
               "す: DPO の損失は −log σ です",
               "-F.logsigmoid(beta * (chosen_logratios - "
               "rejected_logratios))")},
    "no_minus": {
        "en": ("no minus sign",
               "log σ(β·margin) is the log-likelihood to maximise; the "
               "Trainer minimises, so that narrows the margin",
               "put a minus in front: -F.logsigmoid(...)"),
        "ja": ("マイナス符号がない",
               "log σ(β·margin) は最大化する対数尤度です。Trainer は最小化す"
               "るので、これではマージンが狭まります",
               "前にマイナスを付けてください: -F.logsigmoid(...)")},
    "beta_outside_logsigmoid": {
        "en": ("β outside the log-sigmoid",
               "−β · log σ(margin) only scales the loss: β belongs inside, "
               "where it sets how far the margin must grow before the loss "
               "flattens",
               "-F.logsigmoid(beta * (chosen_logratios - "
               "rejected_logratios))"),
        "ja": ("log-sigmoid の外の β",
               "−β · log σ(margin) は損失を β 倍するだけです。β は内側に置き"
               "ます。そこで β は、損失が平らになるまでにマージンがどれだけ広"
               "がる必要があるかを決めます",
               "-F.logsigmoid(beta * (chosen_logratios - "
               "rejected_logratios))")},
    "judge.not three": {
        "en": "returned {kind}, not a tuple of three",
        "ja": "3 つ組のタプルではなく {kind} を返しました"},
    "judge.order": {
        "en": "your dpo_loss returns the three right tensors in another "
              "order: return (losses, chosen_rewards, rejected_rewards)",
        "ja": "dpo_loss は正しい 3 つのテンソルを別の順序で返しています: "
              "(losses, chosen_rewards, rejected_rewards) の順に返してくださ"
              "い"},
    "judge.three": {
        "en": "{out}: return three tensors (losses, chosen_rewards, "
              "rejected_rewards)",
        "ja": "{out}: 3 つのテンソル (losses, chosen_rewards, "
              "rejected_rewards) を返してください"},
    "judge.no gradient": {
        "en": "the losses have no gradient: do not .detach() them (only the "
              "rewards), nor compute them under torch.no_grad()",
        "ja": "損失が勾配を持っていません。損失を .detach() したり (するのは"
              "報酬だけ)、torch.no_grad() の下で計算したりしないでください"},
    "judge.rewards": {
        "en": "the rewards are for logging: .detach() them",
        "ja": "報酬はログ用です: .detach() してください"},
    "judge.passed": {
        "en": "{verdict} for beta 0.1 and 0.5",
        "ja": "beta 0.1 と 0.5 で {verdict}"},
    "property:beta_written_in": {
        "en": ("beta written in",
               "right at one beta, wrong at the other: scale the margin and "
               "the rewards by the beta argument"),
        "ja": ("beta の決め打ち",
               "一方の beta では正しく、もう一方で違います。マージンと報酬に"
               "は引数の beta を掛けます")},
    "property:losses": {
        "en": ("the losses",
               "the rewards are right, the losses are not: from the same "
               "log-ratios the loss is −log σ(β · ((π_c − ref_c) − (π_r − "
               "ref_r))), each reference subtracted once, β inside"),
        "ja": ("損失",
               "報酬は正しく、損失が違います。損失は同じ対数比から作る "
               "−log σ(β · ((π_c − ref_c) − (π_r − ref_r))) です。参照モデル"
               "を引くのはそれぞれ 1 回、β は内側です")},
    "property:rewards": {
        "en": ("the rewards",
               "the losses are right, the rewards are not: each reward is "
               "beta times its log-ratio, detached, since it is only "
               "logged"),
        "ja": ("報酬",
               "損失は正しく、報酬が違います。報酬はそれぞれ beta × 対数比"
               "で、ログに記録するだけなので .detach() します")},
    "property:rejected_side": {
        "en": ("the rejected side",
               "the chosen rewards are right, the rejected ones and the "
               "losses are not: the rejected log-ratio is π_r − ref_r, "
               "policy minus reference, as the chosen one"),
        "ja": ("rejected 側",
               "chosen の報酬は正しく、rejected の報酬と損失が違います: "
               "rejected の対数比も chosen と同じく π_r − ref_r (方策 − 参照) "
               "です")},
    "property:chosen_side": {
        "en": ("the chosen side",
               "the rejected rewards are right, the chosen ones and the "
               "losses are not: the chosen log-ratio is π_c − ref_c, "
               "policy minus reference, as the rejected one"),
        "ja": ("chosen 側",
               "rejected の報酬は正しく、chosen の報酬と損失が違います: "
               "chosen の対数比も rejected と同じく π_c − ref_c (方策 − 参照) "
               "です")},
}


@exercise("dpo_loss", words=DPO_LOSS_WORDS,
          stars=2, notebook=NOTEBOOK, answer=losses.dpo_loss,
          kit_code=("kit.losses:dpo_loss",),
          solution=dpo_loss, judge=_judge_pair_loss, properties=[
              Property("beta_written_in", varies=r"beta=([\d.]+)", rung=3),
              # before the sides: wrong losses beside right rewards are
              # no side's log-ratio
              Property("losses", lambda name: name.endswith(": losses"),
                       rung=2),
              Property("rewards", "rewards", rung=6),
              Property("rejected_side", lambda name: name.endswith(
                  (": losses", ": rejected_rewards")), rung=1),
              Property("chosen_side", lambda name: name.endswith(
                  (": losses", ": chosen_rewards")), rung=1),
          ], mistakes=[
              Mistake("published_snippet", dpo_as_published, rung=3),
              Mistake("mean_not_per_pair", dpo_mean, rung=5),
              Mistake("rewards_not_detached", dpo_rewards_attached, rung=6),
              Mistake("losses_detached", dpo_losses_detached, rung=5),
              Mistake("no_reference", dpo_no_reference, rung=1),
              Mistake("beta_of_the_paper", dpo_beta_written_in, rung=3),
              Mistake("chosen_rejected_swapped", dpo_swapped, rung=2),
              Mistake("sigmoid_not_logsigmoid", dpo_sigmoid, rung=4),
              Mistake("no_minus", dpo_no_minus, rung=4),
              Mistake("beta_outside_logsigmoid", dpo_beta_outside, rung=4),
          ])
def observe_dpo_loss(candidate):
    return {f"beta={beta}": attempt(_run_pair_loss, candidate, beta)
            for beta in (0.1, 0.5)}


# ------------------------------------------------------------ dpo_snippet

# What dpo_snippet's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint).
DPO_SNIPPET_WORDS = {
    "hints": {
        "en": ["Operator precedence: in β·a − b, β multiplies a alone.",
               "Write the paper's β·(a − b) with the brackets: β scales the "
               "whole difference, neither side alone.",
               "Keep the minus in front: the loss is −log σ(β·(a − b))."],
        "ja": ["演算子の優先順位: β·a − b では、β は a だけに掛かります。",
               "論文の β·(a − b) を括弧付きで書きます: β はどちらか一方ではな"
               "く差全体に掛かります。",
               "前のマイナスは残します。損失は −log σ(β·(a − b)) です。"]},
    "published_snippet": {
        "en": ("the published snippet",
               "β·a − b multiplies only the chosen side by β",
               "brackets: β · (chosen_scores − rejected_scores)"),
        "ja": ("公開されたスニペット",
               "β·a − b では chosen の側だけに β が掛かります",
               "括弧を付けます: β · (chosen_scores − rejected_scores)")},
    "beta_on_rejected": {
        "en": ("β on the rejected side",
               "a − β·b scales only the rejected side: the same slip as the "
               "snippet's, mirrored",
               "brackets: β · (chosen_scores − rejected_scores)"),
        "ja": ("rejected の側に β",
               "a − β·b では rejected の側だけが β 倍されます。スニペットと同"
               "じ誤りの鏡像です",
               "括弧を付けます: β · (chosen_scores − rejected_scores)")},
    "no_minus": {
        "en": ("no minus sign",
               "log σ(...) is what DPO maximises; the loss to minimise is "
               "its negative",
               "-F.logsigmoid(beta * (chosen_scores - rejected_scores))"),
        "ja": ("マイナス符号がない",
               "log σ(...) は DPO が最大化するものです。最小化する損失はその"
               "符号を反転したものです",
               "-F.logsigmoid(beta * (chosen_scores - rejected_scores))")},
    "property:beta_written_in": {
        "en": ("beta written in",
               "right at one beta only, wrong at the others: use the beta "
               "argument, and forgetting it is writing in beta = 1"),
        "ja": ("beta の決め打ち",
               "1 つの beta でだけ正しく、ほかの値では違います。引数の beta "
               "を使います。beta を忘れるのは beta = 1 の決め打ちと同じです")},
}


@exercise("dpo_snippet", words=DPO_SNIPPET_WORDS,
          stars=2, notebook=NOTEBOOK, answer=fixed_snippet, properties=[
              Property("beta_written_in", varies=r"beta=([\d.]+)", rung=2),
          ], mistakes=[
              Mistake("published_snippet", published_snippet, rung=1),
              Mistake("beta_on_rejected", snippet_beta_on_rejected, rung=2),
              Mistake("no_minus", snippet_no_minus, rung=3),
          ])
def observe_dpo_snippet(candidate):
    # scores with a gradient: a fixed snippet whose losses are detached
    # cannot train, and compare() says so
    chosen, rejected = (t.requires_grad_() for t in _pairs(3)[:2])
    return {f"losses (beta={beta})": attempt(
        call, candidate, dict(chosen_scores=chosen, rejected_scores=rejected),
        beta=beta) for beta in (0.1, 1.0, 2.5)}
