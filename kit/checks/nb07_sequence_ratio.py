"""Checker for notebook 07's ★★ GSPO exercise: the sequence-level ratio.

GSPO (Zheng et al., 2025; TRL's importance_sampling_level="sequence") gives
each completion one importance ratio, the exp of the mean of its tokens'
log-ratios, and clips that ratio once. Checked as a property over several
inputs: uneven lengths (1 token up to the padded width), padding whose
log-probs moved, two batch sizes, several epsilon, ratios inside and past
the clip, and the gradient, which must reach the log-probs.
"""

import torch

from kit import losses
from kit.checks.compare import Raised, attempt, call, loss_and_gradient
from kit.checks.core import Mistake, Property, exercise
from kit.checks.nb05_grpo_loss import judge_loss
from kit.checks.nb07_loss_types import DAPO_LOSS_WORDS, NOTEBOOK


def kit_gspo_loss(per_token_logps, old_per_token_logps, advantages,
                  completion_mask, epsilon=0.2):
    """The kit's answer: grpo_loss at the sequence level, no KL."""
    return losses.grpo_loss(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon,
                            importance_sampling_level="sequence")


# The printed solution: self-contained, as the notebook's cell is.

def gspo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2):
    """A scalar: the mean over completions of the clipped loss of each
    completion's one ratio."""
    mask = completion_mask.float()
    log_ratio = (per_token_logps - old_per_token_logps) * mask  # (B, T)
    lengths = mask.sum(1).clamp(min=1)  # (B,)
    ratio = torch.exp(log_ratio.sum(1) / lengths)  # (B,): one a completion
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


# The mistakes: each changes one thing of the right answer.

def _clipped_loss(ratio, clipped, advantages):
    return -torch.min(ratio * advantages, clipped * advantages).mean()


def _mean_log_ratio(per_token_logps, old_per_token_logps, completion_mask):
    mask = completion_mask.float()
    log_ratio = (per_token_logps - old_per_token_logps) * mask
    return log_ratio.sum(1) / mask.sum(1).clamp(min=1)  # (B,)


def token_ratios_averaged(per_token_logps, old_per_token_logps, advantages,
                          completion_mask, epsilon=0.2):
    mask = completion_mask.float()
    token_ratio = torch.exp(per_token_logps - old_per_token_logps)
    ratio = (token_ratio * mask).sum(1) / mask.sum(1)  # not the exp's mean
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return _clipped_loss(ratio, clipped, advantages)


def no_length_normalisation(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon=0.2):
    mask = completion_mask.float()
    log_ratio = (per_token_logps - old_per_token_logps) * mask
    ratio = torch.exp(log_ratio.sum(1))  # the product of the token ratios
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return _clipped_loss(ratio, clipped, advantages)


def clipped_per_token(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2):
    mask = completion_mask.float()
    ratio = torch.exp(_mean_log_ratio(per_token_logps, old_per_token_logps,
                                      completion_mask))
    token_ratio = torch.exp(per_token_logps - old_per_token_logps)
    token_clipped = torch.clamp(token_ratio, 1 - epsilon, 1 + epsilon)
    clipped = torch.exp((torch.log(token_clipped) * mask).sum(1)
                        / mask.sum(1))  # each token clipped, then the mean
    return _clipped_loss(ratio, clipped, advantages)


def ratio_as_a_column(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2):
    mask = completion_mask.float()
    log_ratio = (per_token_logps - old_per_token_logps) * mask
    ratio = torch.exp(log_ratio.sum(1, keepdim=True)
                      / mask.sum(1, keepdim=True))  # (B, 1)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return _clipped_loss(ratio, clipped, advantages)  # (B, 1) x (B,): (B, B)


def mask_forgotten(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2):
    log_ratio = per_token_logps - old_per_token_logps
    ratio = torch.exp(log_ratio.mean(1))  # the padding's log-ratios too
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return _clipped_loss(ratio, clipped, advantages)


def token_level(per_token_logps, old_per_token_logps, advantages,
                completion_mask, epsilon=0.2):
    return losses.grpo_loss(per_token_logps, old_per_token_logps,
                            advantages, completion_mask, epsilon)


def never_clipped(per_token_logps, old_per_token_logps, advantages,
                  completion_mask, epsilon=0.2):
    ratio = torch.exp(_mean_log_ratio(per_token_logps, old_per_token_logps,
                                      completion_mask))
    return -(ratio * advantages).mean()


def detached_loss(per_token_logps, *args, **kwargs):
    return kit_gspo_loss(per_token_logps.detach(), *args, **kwargs)


# ------------------------------------------------------------------ cases

def _case(seed, N, padded=True):
    """N completions of uneven lengths (1 token up to the padded width T),
    token ratios spread enough that some sequence ratios pass the clip,
    padding whose log-probs moved too; or, not `padded`, all T long."""
    T = 6
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(N, T, generator=g) * 3
    logps = old + torch.randn(N, T, generator=g) * 0.3
    lengths = [1, T, 3, 2, T - 1, 4][:N] if padded else [T] * N
    lengths = torch.tensor(lengths)
    mask = (torch.arange(T) < lengths.unsqueeze(1)).long()  # (N, T)
    advantages = torch.randn(N, generator=g)
    return logps, old, advantages, mask


# (seed, N, epsilon, padded): two batch sizes, five clips, none the default
# alone; the last case pads nothing, so that an answer right there alone
# shows it divides by the width, not by each completion's length
CASES = ((0, 4, 0.2, True), (1, 6, 0.1, True), (2, 4, 0.3, True),
         (3, 6, 0.05, True), (4, 4, 0.15, False))


def _loss_and_gradient(candidate, seed, N, epsilon, padded):
    logps, old, advantages, mask = _case(seed, N, padded)
    logps = logps.clone().requires_grad_()
    loss = call(candidate, dict(
        per_token_logps=logps, old_per_token_logps=old,
        advantages=advantages, completion_mask=mask), epsilon=epsilon)
    return loss_and_gradient(loss)


# What the checker says, English beside Japanese: the verdict, the hint
# ladder (gentlest first), each mistake's (title, why, hint).
GSPO_LOSS_WORDS = {
    "judge.passed": {
        "en": "loss and gradient {verdict}, for uneven lengths, moved "
              "padding, two batch sizes, several epsilon",
        "ja": "損失と勾配が{verdict}：長さの不揃いな補完、動いたパディング、"
              "2 つのバッチサイズ、いくつかの epsilon で"},
    "hints": {
        "en": ["One ratio a completion: the exp of the mean of its tokens' "
               "log-ratios (per_token_logps - old_per_token_logps), over "
               "its completion tokens only. Average the logs, then take "
               "the exp: not the mean of the token ratios, not their "
               "product.",
               "Mask before you sum, and divide by each completion's own "
               "length, completion_mask.sum(1): the padding's log-probs "
               "moved too.",
               "Clip that one ratio per completion, torch.clamp(ratio, "
               "1 - epsilon, 1 + epsilon), then -min(ratio * A, clipped * "
               "A) and the mean over completions; no .detach()."],
        "ja": ["補完ごとに比率を 1 つ：その補完のトークンだけで、対数の比率 "
               "(per_token_logps - old_per_token_logps) を平均してから exp "
               "を取ります。トークンの比率の平均でも、積でもありません。",
               "合計する前にマスクし、各補完の長さ completion_mask.sum(1) "
               "で割ります。パディングの対数確率も動いています。",
               "補完ごとの比率 1 つをクリップし (torch.clamp(ratio, 1 - "
               "epsilon, 1 + epsilon))、-min(ratio * A, clipped * A) を補"
               "完で平均します。.detach() は使いません。"]},
    "token_ratios_averaged": {
        "en": ("token ratios averaged",
               "you averaged the token ratios exp(log-ratio): GSPO's ratio "
               "is their geometric mean, the exp of the mean log-ratio, "
               "and the two part as soon as the tokens' ratios differ",
               "torch.exp(mean of the masked log-ratios)"),
        "ja": ("トークンの比率を平均した",
               "トークンの比率 exp(対数の比率) を平均しました。GSPO の比率は"
               "その幾何平均、つまり対数の比率の平均の exp で、トークンの比"
               "率がそろっていなければ 2 つは違います",
               "torch.exp(マスクした対数の比率の平均)")},
    "no_length_normalisation": {
        "en": ("no length normalisation",
               "you summed the log-ratios without dividing by the length: "
               "that is the product of the token ratios, which a long "
               "completion pushes past the clip",
               "divide the masked sum by completion_mask.sum(1)"),
        "ja": ("長さで正規化していない",
               "対数の比率を合計して長さで割っていません。それはトークンの比"
               "率の積で、長い補完ほどクリップの外へ出ます",
               "マスクした合計を completion_mask.sum(1) で割ってください")},
    "clipped_per_token": {
        "en": ("the clip applied per token",
               "you clipped each token's ratio before the mean: GSPO clips "
               "the one sequence ratio, so a completion is kept or cut "
               "whole",
               "torch.clamp(ratio, 1 - epsilon, 1 + epsilon) on the (B,) "
               "ratio"),
        "ja": ("トークンごとにクリップした",
               "平均の前に各トークンの比率をクリップしました。GSPO は系列の比"
               "率 1 つをクリップするので、補完はまるごと残るか切られます",
               "(B,) の比率に torch.clamp(ratio, 1 - epsilon, 1 + epsilon)")},
    "ratio_as_a_column": {
        "en": ("the ratio a column, (B, 1)",
               "your ratio has shape (B, 1) (keepdim=True) and the "
               "advantages (B,): their product broadcasts to a (B, B) "
               "table, each completion's ratio times every advantage, and "
               "its mean is not the loss",
               "sum(1) without keepdim, so that the ratio is (B,) like the "
               "advantages"),
        "ja": ("比率が列 (B, 1) になっている",
               "比率の形が (B, 1) (keepdim=True) で、アドバンテージは (B,) で"
               "す。その積は (B, B) の表にブロードキャストされ、各補完の比率"
               "にすべてのアドバンテージを掛けたものになります。その平均は損"
               "失ではありません",
               "keepdim なしで sum(1) を取り、比率をアドバンテージと同じ (B,) "
               "にしてください")},
    "mask_forgotten": {
        "en": ("mask forgotten in the mean",
               "the mean ran over every position, the padding after <eos> "
               "included: its log-ratios are not the completion's",
               "(log_ratio * mask).sum(1) / mask.sum(1)"),
        "ja": ("平均でマスクを忘れた",
               "平均が <eos> の後のパディングも含む全位置にわたっています。パ"
               "ディングの対数の比率は補完のものではありません",
               "(log_ratio * mask).sum(1) / mask.sum(1)")},
    "token_level": {
        "en": ("a ratio per token (notebook 05's grpo_loss)",
               "every token kept its own ratio and its own clip: that is "
               "the token-level loss of notebook 05",
               "average the log-ratios per completion first, then one exp "
               "and one clip a completion"),
        "ja": ("トークンごとの比率 (ノートブック 05 の grpo_loss)",
               "各トークンが自分の比率とクリップを持っています。それはノートブ"
               "ック 05 のトークン単位の損失です",
               "先に補完ごとに対数の比率を平均し、それから補完ごとに exp とク"
               "リップを 1 回ずつ")},
    "never_clipped": {
        "en": ("never clipped",
               "the loss is -ratio * A alone: with no clip a completion's "
               "ratio may run as far as the gradient takes it",
               "-torch.min(ratio * A, clipped * A) with clipped = "
               "torch.clamp(ratio, 1 - epsilon, 1 + epsilon)"),
        "ja": ("クリップしていない",
               "損失が -ratio * A だけです。クリップがないと、補完の比率は勾"
               "配の向くままどこまでも動けます",
               "clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon) とし"
               "て -torch.min(ratio * A, clipped * A)")},
    # the same slip as dapo_loss's, in the same words
    "detached_loss": DAPO_LOSS_WORDS["detached_loss"],
    "property:padding": {
        "en": ("padded completions",
               "right where no completion is padded, wrong where some are: "
               "a completion's mean runs over its own tokens only: sum "
               "(log_ratio * mask).sum(1), padding left out, and divide by "
               "completion_mask.sum(1), not by the padded width"),
        "ja": ("パディングのある補完",
               "パディングのない入力では正しく、パディングのある入力で違いま"
               "す。補完の平均はその補完のトークンだけでとります。パディング"
               "を除いて (log_ratio * mask).sum(1) で合計し、パディングした幅"
               "ではなく completion_mask.sum(1) で割ります")},
    "property:epsilon_written_in": {
        "en": ("epsilon written in",
               "right at one epsilon only, wrong at the others: clip with "
               "the epsilon argument"),
        "ja": ("epsilon の決め打ち",
               "1 つの epsilon でだけ正しく、ほかの値では違います。引数の "
               "epsilon でクリップします")},
    "property:off_by_the_batch": {
        "en": ("off by the batch size",
               "the loss is the reference's times B, or divided by it, for "
               "both batch sizes: take the mean over completions once"),
        "ja": ("バッチサイズ分ずれている",
               "どちらのバッチサイズでも、損失が参照実装の B 倍か B 分の 1 で"
               "す。補完での平均は 1 回だけ取ります")},
}


@exercise("gspo_loss", words=GSPO_LOSS_WORDS,
          stars=2, notebook=NOTEBOOK, answer=kit_gspo_loss,
          kit_code=("kit.losses:importance_ratio", "kit.losses:grpo_loss"),
          solution=gspo_loss,
          judge=lambda candidate, seen, expected: judge_loss(
              seen, expected, passed=GSPO_LOSS_WORDS["judge.passed"]),
          properties=[
              Property("padding", where=lambda name: "nothing padded"
                       not in name, rung=2),
              Property("epsilon_written_in", varies=r"epsilon=([\d.]+)",
                       rung=3),
              Property("off_by_the_batch", off_by=r"B=(\d+)", rung=3)],
          mistakes=[
              Mistake("token_ratios_averaged", token_ratios_averaged,
                      rung=1),
              Mistake("no_length_normalisation", no_length_normalisation,
                      rung=2),
              Mistake("clipped_per_token", clipped_per_token, rung=3),
              Mistake("mask_forgotten", mask_forgotten, rung=2),
              Mistake("ratio_as_a_column", ratio_as_a_column, rung=1),
              Mistake("token_level", token_level, rung=1),
              Mistake("never_clipped", never_clipped, rung=3),
              Mistake("detached_loss", detached_loss, rung=3),
          ])
def observe_gspo_loss(candidate):
    seen = {}
    for seed, N, epsilon, padded in CASES:
        out = attempt(_loss_and_gradient, candidate, seed, N, epsilon,
                      padded)
        loss, gradient = (out, None) if isinstance(out, Raised) else out
        case = f"B={N}, epsilon={epsilon}" + ("" if padded else
                                              ", nothing padded")
        seen[f"loss ({case})"] = loss
        seen[f"gradient ({case})"] = gradient
    return seen
