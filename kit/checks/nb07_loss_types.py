"""Checkers for notebook 07: the "dapo" and "dr_grpo" normalisers.

Both exercises are checked as properties over several inputs: uneven
completion lengths, several epsilon and beta (0 with no reference at all),
two batch sizes, a policy that has not moved, and the gradient, which must
reach the log-probs.
"""

import torch

from kit import losses
from kit.checks.compare import Raised, attempt, call, loss_and_gradient
from kit.checks.core import Mistake, Property, exercise
from kit.checks.nb05_grpo_loss import (
    GRPO_LOSS_WORDS, Reading, clip_elsewhere, judge_loss,
    ratio_moves_on_policy, with_kl)
from kit.losses import per_token_kl

NOTEBOOK = "07_loss_types"


def _token_losses(per_token_logps, old_per_token_logps, advantages,
                  epsilon, beta, ref_per_token_logps):
    return losses.clipped_token_losses(
        per_token_logps, old_per_token_logps, advantages, epsilon, beta,
        ref_per_token_logps)  # (N, T)


# --------------------------------------------- mistakes shared by the two

def bnpo(per_token_logps, old_per_token_logps, advantages, completion_mask,
         epsilon=0.2, beta=0.0, ref_per_token_logps=None, **normaliser):
    return losses.bnpo_loss(per_token_logps, old_per_token_logps, advantages,
                            completion_mask, epsilon, beta,
                            ref_per_token_logps)


def per_sequence_mean(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2, beta=0.0,
                      ref_per_token_logps=None, **normaliser):
    return losses.grpo_loss(per_token_logps, old_per_token_logps, advantages,
                            completion_mask, epsilon, beta,
                            ref_per_token_logps)


def _detached(answer):
    def detached_loss(per_token_logps, *args, **kwargs):
        return answer(per_token_logps.detach(), *args, **kwargs)
    return detached_loss


def _kl_when_beta_0(normalise):
    def kl_when_beta_0(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None, **normaliser):
        per_token = _token_losses(per_token_logps, old_per_token_logps,
                                  advantages, epsilon, 0.0, None)
        per_token = per_token + beta * losses.per_token_kl(
            per_token_logps, ref_per_token_logps)  # no `if beta > 0`
        total = (per_token * completion_mask.float()).sum()
        return total / normalise(per_token, completion_mask, **normaliser)
    return kl_when_beta_0


def _with_token_losses(token_losses, normalise):
    """grpo_loss's per-token loss with one slip (`token_losses`), the
    division right: the slips of notebook 05, made again here."""
    def answer(per_token_logps, old_per_token_logps, advantages,
               completion_mask, epsilon=0.2, beta=0.0,
               ref_per_token_logps=None, **normaliser):
        ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
        per_token = token_losses(ratio, epsilon, advantages.unsqueeze(1))
        if beta > 0:
            per_token = per_token + beta * losses.per_token_kl(
                per_token_logps, ref_per_token_logps)
        total = (per_token * completion_mask.float()).sum()
        return total / normalise(per_token, completion_mask, **normaliser)
    return answer


def _clip(ratio, epsilon):
    return torch.clamp(ratio, 1 - epsilon, 1 + epsilon)


# {id: (ratio, epsilon, A) -> the per-token loss}: each changes one thing
TOKEN_SLIPS = {
    "no_min": lambda r, e, a: -_clip(r, e) * a,
    "max_not_min": lambda r, e, a: -torch.max(r * a, _clip(r, e) * a),
    "min_of_the_ratios": lambda r, e, a: -torch.min(r, _clip(r, e)) * a,
    "no_minus": lambda r, e, a: torch.min(r * a, _clip(r, e) * a),
    # exp(old − new)
    "ratio_inverted": lambda r, e, a: -torch.min(a / r, _clip(1 / r, e) * a),
}


def _token_slips(normalise):
    return [Mistake(key, _with_token_losses(slip, normalise), rung=1)
            for key, slip in TOKEN_SLIPS.items()]


def _step_count(per_token, completion_mask, num_items_in_batch):
    return num_items_in_batch


def _config_count(per_token, completion_mask, max_completion_length):
    return per_token.shape[0] * max_completion_length


# ----------------------------------------------------------- dapo_loss

def tokens_before_masking(per_token_logps, old_per_token_logps, advantages,
                          completion_mask, epsilon=0.2, beta=0.0,
                          ref_per_token_logps=None, num_items_in_batch=None):
    per_token = _token_losses(per_token_logps, old_per_token_logps,
                              advantages, epsilon, beta, ref_per_token_logps)
    return per_token.sum() / num_items_in_batch  # padding summed in


# -------------------------------------------------------- dr_grpo_loss

def longest_in_data(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2, beta=0.0,
                    ref_per_token_logps=None, max_completion_length=None):
    longest = int(completion_mask.sum(1).max())  # the data's, not the config's
    return losses.dr_grpo_loss(per_token_logps, old_per_token_logps,
                               advantages, completion_mask, epsilon, beta,
                               ref_per_token_logps, longest)


def mask_width(per_token_logps, old_per_token_logps, advantages,
               completion_mask, epsilon=0.2, beta=0.0,
               ref_per_token_logps=None, max_completion_length=None):
    width = completion_mask.shape[1]  # the padded batch's width
    return losses.dr_grpo_loss(per_token_logps, old_per_token_logps,
                               advantages, completion_mask, epsilon, beta,
                               ref_per_token_logps, width)


# ------------------------------------------------- the printed solutions
# Self-contained, as the notebook's cells are: kit.losses' versions call
# helpers the notebook does not import.

def dapo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, num_items_in_batch=None):
    """A scalar: the masked token sum / num_items_in_batch."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    total = (per_token * completion_mask.float()).sum()
    return total / num_items_in_batch


def dr_grpo_loss(per_token_logps, old_per_token_logps, advantages,
                 completion_mask, epsilon=0.2, beta=0.0,
                 ref_per_token_logps=None, max_completion_length=None):
    """A scalar: the masked token sum / (B x max_completion_length)."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    total = (per_token * completion_mask.float()).sum()
    return total / (per_token.shape[0] * max_completion_length)


# -------------------------------------------------------------- cases

def _case(seed, N, kind=""):
    """N completions of uneven lengths (1 token up to T), some ratios past
    the clip, padding whose losses are not zero; "on-policy": the policy
    has not moved, every ratio is 1."""
    T = 6
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(N, T, generator=g) * 3
    spread = 0.0 if kind == "on-policy" else 0.4
    logps = old + torch.randn(N, T, generator=g) * spread
    # B=4: the longest (5) is shorter than the padded width (6)
    lengths = torch.tensor([1, T - 1, 3, 2] if N == 4
                           else [1, T, 3, 2, T - 1, 4][:N])
    mask = (torch.arange(T) < lengths.unsqueeze(1)).long()  # (N, T)
    advantages = torch.randn(N, generator=g)
    ref = old - 0.3 * torch.rand(N, T, generator=g)
    return logps, old, advantages, mask, ref


# (seed, N, epsilon, beta, max_completion_length, kind): beta = 0 comes
# with no reference at all; two betas and four lengths (each longer than
# every completion), so that no constant written into an answer matches
# them all; the last on-policy, where a right ratio is 1
CASES = ((0, 4, 0.2, 0.0, 8, ""), (1, 6, 0.1, 0.0, 12, ""),
         (2, 4, 0.3, 0.04, 10, ""), (3, 6, 0.2, 0.1, 16, ""),
         (4, 4, 0.2, 0.0, 14, "on-policy"))


def _normaliser_of(exercise_id, mask, seed, max_completion_length):
    if exercise_id == "dapo_loss":
        # the step's count: this micro-batch's tokens and another's
        return {"num_items_in_batch": int(mask.sum()) + 5 + seed}
    return {"max_completion_length": max_completion_length}


def _inputs(exercise_id, seed, N, epsilon, beta, max_completion_length,
            kind):
    """The keyword arguments of one case."""
    logps, old, advantages, mask, ref = _case(seed, N, kind)
    return dict(per_token_logps=logps, old_per_token_logps=old,
                advantages=advantages, completion_mask=mask,
                epsilon=epsilon, beta=beta,
                ref_per_token_logps=ref if beta > 0 else None,
                **_normaliser_of(exercise_id, mask, seed,
                                 max_completion_length))


def _case_name(exercise_id, seed, N, epsilon, beta, length, kind):
    case = f"B={N}, epsilon={epsilon}, beta={beta}"
    if exercise_id == "dr_grpo_loss":
        case += f", max_completion_length={length}"
    return case + (f": {kind}" if kind else "")


def _inputs_of(exercise_id):
    """name -> the keyword arguments its observation was made with."""
    def inputs_of(name):
        for case in CASES:
            if name.endswith(f"({_case_name(exercise_id, *case)})"):
                return _inputs(exercise_id, *case)
        raise KeyError(name)
    return inputs_of


def _loss_and_gradient(exercise_id, candidate, *case):
    inputs = _inputs(exercise_id, *case)
    tensors = {key: inputs.pop(key) for key in (
        "per_token_logps", "old_per_token_logps", "advantages",
        "completion_mask")}
    tensors["per_token_logps"].requires_grad_()  # _case made it afresh
    return loss_and_gradient(call(candidate, tensors, **inputs))


def _observe(exercise_id, candidate):
    seen = {}
    for case in CASES:
        out = attempt(_loss_and_gradient, exercise_id, candidate, *case)
        loss, gradient = (out, None) if isinstance(out, Raised) else out
        name = _case_name(exercise_id, *case)
        seen[f"loss ({name})"] = loss
        seen[f"gradient ({name})"] = gradient
    return seen


# the verdict of both exercises' judge, English beside Japanese
LOSS_TYPES_WORDS = {
    "judge.passed": {
        "en": "loss and gradient {verdict}, for uneven lengths, two batch "
              "sizes, several epsilon, with and without KL",
        "ja": "損失と勾配が{verdict}: 長さの不揃いな補完、2 つのバッチサイズ"
              "、いくつかの epsilon、KL のあり・なしで"},
}


def _properties(exercise_id):
    """What both losses are checked against, beyond their catalogues: the
    per-token loss is grpo_loss's (rung 1), the KL is rung 3 of both.

    The readings of the clip come first: they hold of the whole answer,
    where an answer with the wrong bounds can be right by chance in one
    case, and so at one epsilon, one length, or while beta = 0."""
    answer = getattr(losses, exercise_id)
    length = [Property("length_written_in",
                       varies=r"max_completion_length=(\d+)", rung=2)]
    return [Reading("ratio_moves_on_policy", rung=1,
                    reads=ratio_moves_on_policy),
            Reading("clip_elsewhere", rung=1, reads=clip_elsewhere(
                answer, _inputs_of(exercise_id)))] + (
        length if exercise_id == "dr_grpo_loss" else []) + [
            Property("kl_term", with_kl, rung=3),
            Property("epsilon_written_in", varies=r"epsilon=([\d.]+)",
                     rung=1),
            Property("beta_written_in", varies=r"beta=([\d.]+)", rung=3),
            Property("off_by_the_batch", off_by=r"B=(\d+)", rung=1)]


def _judge(seen, expected):
    return judge_loss(seen, expected,
                      passed=LOSS_TYPES_WORDS["judge.passed"])


# What dapo_loss's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint).
DAPO_LOSS_WORDS = {
    "hints": {
        "en": ["The same per-token loss as grpo_loss; only the division "
               "changes: sum the masked token losses over the whole "
               "micro-batch, then divide by num_items_in_batch, the count "
               "you are given — not by this micro-batch's tokens, not per "
               "completion.",
               "Mask before you sum: (per_token * "
               "completion_mask.float()).sum(); the padding after <eos> has "
               "losses too.",
               "Add beta * per_token_kl(...) only when beta > 0 (the "
               "reference is None otherwise), and keep the loss "
               "differentiable: no .detach()."],
        "ja": ["grpo_loss と同じトークンごとの損失で、割り算だけが変わりま"
               "す。マスクしたトークンの損失をマイクロバッチ全体で合計し、与"
               "えられた数 num_items_in_batch で割ります。このマイクロバッチ"
               "のトークン数でも、補完ごとでもありません。",
               "合計する前にマスクします: (per_token * "
               "completion_mask.float()).sum()。<eos> の後のパディングにも損"
               "失があります。",
               "beta * per_token_kl(...) は beta > 0 のときだけ加え (それ以"
               "外では参照モデルは None です)、損失は微分可能なままにしま"
               "す: .detach() は使いません。"]},
    "per_micro_batch": {
        "en": ("normalised per micro-batch (bnpo)",
               "you divided by this micro-batch's active tokens: that is "
               "\"bnpo\"; a micro-batch with few tokens then weighs as much "
               "as one with many",
               "divide by num_items_in_batch, the step's token count"),
        "ja": ("マイクロバッチごとに正規化 (bnpo)",
               "このマイクロバッチの有効なトークン数で割りました。それは "
               "\"bnpo\" で、トークンの少ないマイクロバッチが多いものと同じ重"
               "みになります",
               "このステップのトークン数である num_items_in_batch で割ってくだ"
               "さい")},
    "per_sequence_mean": {
        "en": ("per-sequence mean (grpo)",
               "each completion's tokens were averaged first: that is "
               "\"grpo\", where a short completion's tokens weigh more",
               "one sum over every masked token, then / num_items_in_batch"),
        "ja": ("系列ごとの平均 (grpo)",
               "各補完のトークンを先に平均しました。それは \"grpo\" で、短い"
               "補完のトークンが重くなります",
               "マスクした全トークンで 1 回合計し、それから / "
               "num_items_in_batch")},
    "tokens_before_masking": {
        "en": ("tokens counted before masking",
               "the sum includes the padding after <eos>: those losses are "
               "not zero, and they are not the policy's completion",
               "(per_token * completion_mask.float()).sum()"),
        "ja": ("マスクの前にトークンを数えた",
               "合計に <eos> の後のパディングが入っています。その損失は 0 で"
               "はなく、方策の補完でもありません",
               "(per_token * completion_mask.float()).sum()")},
    "kl_when_beta_0": {
        "en": ("KL added when beta = 0",
               "with beta = 0 there is no reference: ref_per_token_logps is "
               "None",
               "add the KL only inside `if beta > 0:`"),
        "ja": ("beta = 0 で KL を加えた",
               "beta = 0 では参照モデルがありません: ref_per_token_logps は "
               "None です",
               "KL は `if beta > 0:` の中でだけ加えてください")},
    "detached_loss": {
        "en": ("detached loss",
               "the loss carries no gradient to per_token_logps: training "
               "would learn nothing",
               "no .detach(), .item() or torch.no_grad() on the policy's "
               "log-probs"),
        "ja": ("切り離された損失",
               "損失が per_token_logps への勾配を持っていません。学習しても何"
               "も学びません",
               "方策の対数確率に .detach()、.item()、torch.no_grad() を使わ"
               "ないでください")},
    "property:epsilon_written_in": {
        "en": ("epsilon written in",
               "right at one epsilon only, wrong at the others: the per-token "
               "loss is grpo_loss's, clipped with the epsilon argument"),
        "ja": ("epsilon の決め打ち",
               "1 つの epsilon でだけ正しく、ほかの値では違います。トークンご"
               "との損失は grpo_loss と同じで、引数の epsilon でクリップしま"
               "す")},
    "property:kl_term": {
        "en": ("the KL term",
               "right while beta = 0, wrong where beta > 0: add beta * "
               "per_token_kl(per_token_logps, ref_per_token_logps) to each "
               "token's loss before the sum"),
        "ja": ("KL の項",
               "beta = 0 では正しく、beta > 0 で違います。合計の前に、各トー"
               "クンの損失に beta * per_token_kl(per_token_logps, "
               "ref_per_token_logps) を足します")},
    "property:off_by_the_batch": {
        "en": ("off by the batch size",
               "the loss is the reference's times B, or divided by it, for "
               "both batch sizes: one division by the number of completions "
               "too few or too many; the divisor is the hint's count, no "
               "more"),
        "ja": ("バッチサイズ分ずれている",
               "どちらのバッチサイズでも、損失が参照実装の B 倍か B 分の 1 で"
               "す。補完の数で割る回数が 1 回足りないか多すぎます。割る数はヒ"
               "ントにある数だけです")},
    # the same slips as grpo_loss's, in the same words
    "property:beta_written_in": GRPO_LOSS_WORDS["property:beta_written_in"],
    **{key: GRPO_LOSS_WORDS[key] for key in (
        *TOKEN_SLIPS, "property:ratio_moves_on_policy",
        "property:clip_elsewhere")},
}


@exercise("dapo_loss", words=DAPO_LOSS_WORDS,
          stars=2, notebook=NOTEBOOK, answer=losses.dapo_loss,
          kit_code=("kit.losses:dapo_loss",),
          solution=dapo_loss,
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          properties=_properties("dapo_loss"), mistakes=[
              Mistake("per_micro_batch", bnpo, rung=1),
              Mistake("per_sequence_mean", per_sequence_mean, rung=1),
              Mistake("tokens_before_masking", tokens_before_masking,
                      rung=2),
              Mistake("kl_when_beta_0", _kl_when_beta_0(_step_count),
                      rung=3),
              Mistake("detached_loss", _detached(losses.dapo_loss), rung=3),
          ] + _token_slips(_step_count))
def observe_dapo_loss(candidate):
    return _observe("dapo_loss", candidate)


# What dr_grpo_loss's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint).
DR_GRPO_LOSS_WORDS = {
    "hints": {
        "en": ["The same per-token loss as grpo_loss; sum the masked token "
               "losses over the micro-batch and divide by a constant: B x "
               "max_completion_length.",
               "max_completion_length is the argument (the config's), not "
               "the longest completion and not the mask's width: a constant "
               "has no length bias.",
               "Add beta * per_token_kl(...) only when beta > 0 (the "
               "reference is None otherwise), and keep the loss "
               "differentiable: no .detach()."],
        "ja": ["grpo_loss と同じトークンごとの損失です。マスクしたトークンの"
               "損失をマイクロバッチで合計し、定数 B x max_completion_length "
               "で割ります。",
               "max_completion_length は引数 (config の値) で、最長の補完でも"
               "マスクの幅でもありません。定数なら長さのバイアスがありません"
               "。",
               "beta * per_token_kl(...) は beta > 0 のときだけ加え (それ以"
               "外では参照モデルは None です)、損失は微分可能なままにしま"
               "す: .detach() は使いません。"]},
    "longest_in_data": {
        "en": ("max length taken from the data",
               "you divided by the longest completion in the batch: it "
               "changes with the batch, so the length bias comes back",
               "per_token.shape[0] * max_completion_length (the argument)"),
        "ja": ("最大長をデータから取った",
               "バッチ中で最長の補完で割りました。それはバッチごとに変わるの"
               "で、長さのバイアスが戻ってきます",
               "per_token.shape[0] * max_completion_length (引数)")},
    "mask_width": {
        "en": ("max length taken from the mask's width",
               "completion_mask.shape[1] is the padded batch's width, which "
               "depends on the batch; the config's max_completion_length "
               "does not",
               "per_token.shape[0] * max_completion_length (the argument)"),
        "ja": ("最大長をマスクの幅から取った",
               "completion_mask.shape[1] はパディングしたバッチの幅で、バッチ"
               "によります。config の max_completion_length はよりません",
               "per_token.shape[0] * max_completion_length (引数)")},
    "per_micro_batch": {
        "en": ("normalised per micro-batch (bnpo)",
               "you divided by the active tokens: that is \"bnpo\", not a "
               "constant",
               "divide by B x max_completion_length"),
        "ja": ("マイクロバッチごとに正規化 (bnpo)",
               "有効なトークン数で割りました。それは \"bnpo\" で、定数ではあ"
               "りません",
               "B x max_completion_length で割ってください")},
    "per_sequence_mean": {
        "en": ("per-sequence mean (grpo)",
               "each completion's tokens were averaged first: that is "
               "\"grpo\", where a short completion's tokens weigh more",
               "one sum over every masked token, then / (B x max length)"),
        "ja": ("系列ごとの平均 (grpo)",
               "各補完のトークンを先に平均しました。それは \"grpo\" で、短い"
               "補完のトークンが重くなります",
               "マスクした全トークンで 1 回合計し、それから / (B x 最大長)")},
    # the same slips as dapo_loss's, in the same words
    "kl_when_beta_0": DAPO_LOSS_WORDS["kl_when_beta_0"],
    "detached_loss": DAPO_LOSS_WORDS["detached_loss"],
    "property:epsilon_written_in": DAPO_LOSS_WORDS[
        "property:epsilon_written_in"],
    "property:kl_term": DAPO_LOSS_WORDS["property:kl_term"],
    "property:beta_written_in": DAPO_LOSS_WORDS["property:beta_written_in"],
    "property:off_by_the_batch": DAPO_LOSS_WORDS[
        "property:off_by_the_batch"],
    **{key: DAPO_LOSS_WORDS[key] for key in (
        *TOKEN_SLIPS, "property:ratio_moves_on_policy",
        "property:clip_elsewhere")},
    "property:length_written_in": {
        "en": ("a length written in",
               "right at one max_completion_length only, wrong at the "
               "others: divide by B x the max_completion_length argument"),
        "ja": ("長さの決め打ち",
               "1 つの max_completion_length でだけ正しく、ほかの値では違い"
               "ます: B x 引数の max_completion_length で割ります")},
}


@exercise("dr_grpo_loss", words=DR_GRPO_LOSS_WORDS,
          stars=2, notebook=NOTEBOOK,
          kit_code=("kit.losses:dr_grpo_loss",),
          answer=losses.dr_grpo_loss, solution=dr_grpo_loss,
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          properties=_properties("dr_grpo_loss"), mistakes=[
              Mistake("longest_in_data", longest_in_data, rung=2),
              Mistake("mask_width", mask_width, rung=2),
              Mistake("per_micro_batch", bnpo, rung=1),
              Mistake("per_sequence_mean", per_sequence_mean, rung=1),
              Mistake("kl_when_beta_0", _kl_when_beta_0(_config_count),
                      rung=3),
              Mistake("detached_loss", _detached(losses.dr_grpo_loss),
                      rung=3),
          ] + _token_slips(_config_count))
def observe_dr_grpo_loss(candidate):
    return _observe("dr_grpo_loss", candidate)
