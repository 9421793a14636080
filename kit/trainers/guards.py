"""Refuse what we cannot train on, before or while training: one place.

The configs share one rule for numbers; DPO and GRPO share what they accept
as a dataset and the dataset checks; GRPO's rewards are checked on every
call, because a reward function can go wrong on any batch. (The stop on a
nan or inf loss lives in kit.trainers.nonfinite.)
"""

import copy
import functools
import math
import numbers
import operator
import sys
import warnings
from contextlib import nullcontext

import torch
from datasets import Dataset, DatasetDict, IterableDataset

from kit import i18n

FLOAT32_MAX = torch.finfo(torch.float32).max

ACCEPTED = ("a datasets.Dataset, a list of dicts (one per row) or a pandas "
            "DataFrame")

# Every refusal the trainers' guards and configs make, in one table: each
# names the field and the fix. Shaped as kit.i18n's tables, so another
# language adds a "ja": {...} beside "en".
MESSAGES = {"en": {
    # configs
    "field": "{owner}.{field} must be {what} {bound}, got {shown}: {fix}",
    "whole_groups": "GRPOConfig.per_device_train_batch_size ({batch}) counts "
                    "completions and must be a multiple of num_generations "
                    "({G}): try {lower} or {higher}",
    # datasets and tokenizers
    "streamed": "{name} is an IterableDataset (streamed), which has no "
                "length: load it without streaming=True, or take rows with "
                "Dataset.from_list(list(data.take(1000)))",
    "splits": "{name} is a DatasetDict of the splits {splits}: pass one "
              "split, e.g. data[{first!r}]",
    "not_a_dataset": "{name} is a {kind}: give " + ACCEPTED,
    "no_pad_token": "{trainer} needs processing_class: a tokenizer with a pad "
                    "token (tokenizer.pad_token = tokenizer.eos_token is the "
                    "usual fix)",
    "empty": "{name} is empty: {algorithm} needs {rows}",
    "no_column": "{name} has no column {column!r}: {algorithm} needs "
                 "{columns} (it has {has})",
    "not_text": "{name} row {index}: column {column!r} holds {value!r} "
                "({kind}), not text: make every {column!r} a string (e.g. "
                "str(value))",
    "prompt_too_long": "{name} row {index}: the prompt has {length} tokens, "
                       "{short} is {limit}: raise {field} or shorten the "
                       "prompt",
    "unknown_text": "{name}: {rows} of {total} rows have characters outside "
                    "the tokenizer's vocabulary, which all become {unk}, so "
                    "the model cannot tell them apart ({per_column}; e.g. row "
                    "{row} {column!r} {start!r}: {examples}): write the text "
                    "in characters the tokenizer knows, or use a tokenizer "
                    "that knows them",
    "empty_prompt": "{name} row {index}: the prompt is {prompt!r} ({count} "
                    "such rows): GRPO answers prompts, and an empty one asks "
                    "nothing; drop those rows or give each a prompt",
    "enough_prompts": "train_dataset has {have} prompts; one generation "
                      "needs {needed} (per_device_train_batch_size x "
                      "steps_per_generation x processes / num_generations): "
                      "add prompts or lower those settings",
    # reward functions
    "no_rewards": "GRPOTrainer needs at least one reward function, got "
                  "reward_funcs=[]: e.g. reward_funcs=[kit.tasks."
                  "correctness_reward]",
    "not_callable": "reward_funcs[{i}] is {shown} ({kind}), not a function: "
                    "give functions reward(prompts, completions, **columns) "
                    "-> list[float]",
    "reward_raised": "reward function {name} raised {kind}: {error} (it gets "
                     "prompts, completions and the {dataset} columns "
                     "{columns} as keyword arguments)",
    "reward_timeout": "reward function {name} ran past its time limit "
                      "({seconds} s a call, GRPOConfig.reward_timeout) on "
                      "{n} completions: make it faster (an endless loop? a "
                      "call that waits on a server?), or raise "
                      "reward_timeout",
    "reward_shape": "reward function {name} returned an array of shape "
                    "{shape}: return one float per completion",
    "reward_unreadable": "reward function {name} returned a {kind} whose "
                         "values cannot be read ({error_kind}: {error}): "
                         "return a list with one float per completion",
    "reward_not_a_list": "reward function {name} returned a {kind}, not one "
                         "value per completion: return a list with one float "
                         "per completion",
    "reward_count": "reward function {name} returned {have} values for "
                    "{wanted} completions: return a list with one float per "
                    "completion",
    "reward_not_a_number": "reward function {name} returned {shown} for "
                           "completion {i} ({completion!r}): return a float "
                           "for every completion, 0.0 for no reward",
    "reward_not_finite": "reward function {name} returned {shown} for "
                         "completion {i} ({completion!r}): rewards must be "
                         "finite float32 numbers; clip them (e.g. "
                         "max(math.log(p), -10.0) instead of math.log(p))",
    "reward_unscored": "reward function {name} returned None for completion "
                       "{i} ({completion!r}), and no other reward function "
                       "scored it ({count} in all): return a float (0.0 for "
                       "no reward) from at least one; None (TRL's \"no "
                       "opinion\") is for a completion another one scores",
    "choice":
        "{owner}.{name} must be one of {choices}, got {value!r}",
    "float32":
        "{owner}.{field} is {shown}, which is {as32} in float32 (the dtype "
        "the loss is computed in): {fix}",
    "ipo_beta":
        "DPOConfig.beta is {shown}: with loss_type='ipo' the target margin "
        "1/(2·beta) is inf in float32, and the loss nan; try 0.1",
    "greedy":
        "GRPOConfig.temperature is {shown}: in float32 a token one logit "
        "below the best then gets probability exp(-1/{shown}) = 0, so every "
        "completion of a prompt is the same and every advantage 0 (nothing "
        "to learn); use {least} or more (1.0 samples the policy as it is)",
    # kit.trainers.dpo: label smoothing, and pairs that teach nothing
    "smoothing_too_big":
        "DPOConfig.label_smoothing must be below 0.5, got {value}: at 0.5 a "
        "label is as likely flipped as not and robust DPO divides by "
        "1 − 2·0.5 = 0; try 0.1",
    "exo_needs_smoothing":
        "DPOConfig.loss_type='exo_pair' needs label_smoothing above 0: it is "
        "EXO's ε, and log(0) makes the loss inf; try 1e-3, the EXO paper's",
    "tau_unread":
        "DPOConfig.discopop_tau={value} does nothing with "
        "loss_type={loss_type!r}: only 'discopop' reads it; set "
        "loss_type='discopop', or leave discopop_tau at its default "
        "({default})",
    "smoothing_unread":
        "DPOConfig.label_smoothing={value} does nothing with "
        "loss_type={loss_type!r}: only {readers} read it; set "
        "loss_type='robust' or label_smoothing=0",
    "pairs_same":
        "{name} row {row}: chosen and rejected are both {text!r} ({count} "
        "such pairs): DPO learns nothing from a pair without a difference; "
        "drop those rows or give them a different rejected answer",
    "tokens_same":
        "{name} row {row}: chosen {chosen!r} and rejected {rejected!r} "
        "become the same tokens ({count} such pairs; e.g. characters "
        "outside the tokenizer's vocabulary all become one unk token): DPO "
        "learns nothing from them; drop those rows, or write them in "
        "characters the tokenizer knows",
    "cut_equal":
        "{name}: cut to max_length={max_length} tokens, chosen equals "
        "rejected in {equal} of {total} pairs (first: row {first}): raise "
        "DPOConfig.max_length",
    "cut_warning":
        "{name}: {cuts} of {total} pairs were cut to max_length={max_length} "
        "tokens and lost their end (<eos>): raise DPOConfig.max_length to "
        "keep them whole",
    "epsilon_high_unread":
        "GRPOConfig.epsilon_high={value} does nothing with "
        "loss_type={loss_type!r}: the kit clips symmetrically by epsilon "
        "(TRL also takes epsilon_high as the clip's upper bound); only "
        "'cispo' reads it. Set loss_type='cispo' or epsilon_high=None",
    "loss_field_unread":
        "GRPOConfig.{name}={value} does nothing with loss_type={loss_type!r}: "
        "only {readers} read it. Set loss_type={readers[0]!r}, or leave "
        "{name} at its default ({default})",
    "kl_correction_unread":
        "GRPOConfig.use_bias_correction_kl=True does nothing with beta=0: it "
        "corrects the KL term, and beta=0 leaves that term out. Set beta "
        "above 0 (try 0.04), or use_bias_correction_kl=False",
    "reward_weights":
        "GRPOConfig.reward_weights must be None or a list of finite "
        "numbers, one per reward function, got {shown}: e.g. [1.0, 0.5] "
        "for two functions",
    "reward_weights_zero":
        "GRPOConfig.reward_weights are all 0 ({shown}): no reward reaches "
        "the advantages, so nothing is learned; give at least one function "
        "a weight, e.g. 1.0",
    "reward_weights_count":
        "GRPOConfig.reward_weights has {have} weights for {wanted} reward "
        "functions ({names}): give one weight per function, in "
        "reward_funcs' order",
    "scale_rewards_unread":
        "GRPOConfig.scale_rewards={value!r} does nothing with "
        "multi_objective_aggregation='normalize_then_sum': it divides each "
        "function's rewards by their group's spread, then the sum by the "
        "batch's, as TRL 1.16. Set scale_rewards='group', or "
        "multi_objective_aggregation='sum_then_normalize'",
    "greedy_top_k":
        "GRPOConfig.top_k=1 keeps only the likeliest token: sampling is "
        "greedy, so every completion of a prompt is the same and every "
        "advantage 0 (nothing to learn); use 0 (every token) or 2 or more",
    # kit.trainers.nonfinite
    "nonfinite":
        "training stopped at step {step}: the loss or a gradient is nan or "
        "inf ({what}), so the weights were not updated. Lower "
        "learning_rate, or look for a log(0), a division by zero or a beta "
        "far from 0.1 in the loss or rewards",
}}

# The Japanese half (terms as README.ja.md's glossary); a new refusal adds
# its key here too, with the English one's {fields}: tests/test_i18n.py
# fails until it does. ("field"'s {what} and {fix} are the rules' English
# words, said through FIXES below.)
MESSAGES["ja"] = {
    "field":
        "{owner}.{field} の値は {what} {bound} でなければなりませんが、"
        "{shown} でした。{fix}",
    "whole_groups":
        "GRPOConfig.per_device_train_batch_size ({batch}) は補完の数で、"
        "num_generations ({G}) の倍数でなければなりません: {lower} か "
        "{higher} を試してください",
    "streamed":
        "{name} は IterableDataset (ストリーミング) で、長さがありません: "
        "streaming=True なしで読み込むか、Dataset.from_list(list(data.take(100"
        "0))) で行を取り出してください",
    "splits":
        "{name} は分割 {splits} を持つ DatasetDict です: 1 "
        "つの分割を渡してください (例: data[{first!r}])",
    "not_a_dataset":
        "{name} は {kind} です: datasets.Dataset、dict のリスト (1 行に 1 つ) "
        "か pandas DataFrame を渡してください",
    "no_pad_token":
        "{trainer} には processing_class が必要です。"
        "パディングトークンを持つトークナイザー (よくある修正は "
        "tokenizer.pad_token = tokenizer.eos_token)",
    "empty": "{name} が空です: {algorithm} には {rows} が必要です",
    "no_column":
        "{name} に列 {column!r} がありません: {algorithm} には {columns} "
        "が必要です (あるのは {has})",
    "not_text":
        "{name} の行 {index}: 列 {column!r} の値は {value!r} ({kind}) で、"
        "テキストではありません。すべての {column!r} を文字列にしてください "
        "(例: str(value))",
    "prompt_too_long":
        "{name} の行 {index}: プロンプトが {length} トークンで、{short} は "
        "{limit} です: {field} を上げるかプロンプトを短くしてください",
    "unknown_text":
        "{name}: {total} 行中 {rows} 行にトークナイザーの語彙にない文字があり"
        "、すべて {unk} になるので、モデルはそれらを区別できません "
        "({per_column}; 例：行 {row} {column!r} {start!r}: {examples}): "
        "トークナイザーが知っている文字で書くか、それらを知っているトークナイ"
        "ザーを使ってください",
    "empty_prompt":
        "{name} の行 {index}: プロンプトが {prompt!r} です (このような行が "
        "{count} 行): GRPO はプロンプトに答えるもので、空のプロンプトは何も"
        "尋ねていません。その行を除くか、それぞれにプロンプトを与えてください",
    "enough_prompts":
        "train_dataset のプロンプトは {have} 個ですが、1 回の生成に {needed} "
        "個必要です (per_device_train_batch_size x steps_per_generation x "
        "プロセス数 / num_generations): プロンプトを増やすか、"
        "これらの設定を下げてください",
    "no_rewards":
        "GRPOTrainer には報酬関数が少なくとも 1 つ必要ですが、reward_funcs=[] "
        "でした。例 reward_funcs=[kit.tasks.correctness_reward]",
    "not_callable":
        "reward_funcs[{i}] は {shown} ({kind}) で、関数ではありません。関数 "
        "reward(prompts, completions, **columns) -> list[float] "
        "を渡してください",
    "reward_raised":
        "報酬関数 {name} が {kind} を送出しました: `{error}`"
        "（受け取るのはキーワード引数 prompts、completions と {dataset} の"
        "列 {columns} です）",
    "reward_timeout":
        "報酬関数 {name} が {n} 個の補完で制限時間（1 回 {seconds} 秒、"
        "GRPOConfig.reward_timeout）を超えました。速くするか（無限ループ？"
        "サーバーを待つ呼び出し？）、reward_timeout を大きくしてください",
    "reward_shape":
        "報酬関数 {name} が形状 {shape} の配列を返しました。補完ごとに 1 つの "
        "float を返してください",
    "reward_unreadable":
        "報酬関数 {name} が値を読めない {kind} を返しました ({error_kind}: "
        "{error}): 補完ごとに 1 つの float のリストを返してください",
    "reward_not_a_list":
        "報酬関数 {name} が補完ごとに 1 つの値ではなく {kind} を返しました。"
        "補完ごとに 1 つの float のリストを返してください",
    "reward_count":
        "報酬関数 {name} が {wanted} 個の補完に対して {have} "
        "個の値を返しました。補完ごとに 1 つの float のリストを返してください",
    "reward_not_a_number":
        "報酬関数 {name} が補完 {i} ({completion!r}) に {shown} を返しました。"
        "すべての補完に float を返してください (報酬なしは 0.0)",
    "reward_not_finite":
        "報酬関数 {name} が補完 {i} ({completion!r}) に {shown} を返しました。"
        "報酬は有限の float32 の数でなければなりません。クリップしてください "
        "(例: math.log(p) ではなく max(math.log(p), -10.0))",
    "reward_unscored":
        "報酬関数 {name} が補完 {i} ({completion!r}) に None を返し、ほかの"
        "報酬関数もこれを採点しませんでした (全部で {count} 個)。少なくとも 1 "
        "つの関数から float を返してください (報酬なしは 0.0)。None (TRL の"
        "「意見なし」) は、ほかの関数が採点する補完のためのものです",
    "choice":
        "{owner}.{name} は {choices} のいずれかでなければなりませんが、"
        "{value!r} でした",
    "float32":
        "{owner}.{field} は {shown} で、損失を計算する float32 では {as32} "
        "になります。{fix}",
    "ipo_beta":
        "DPOConfig.beta は {shown} です: loss_type='ipo' では目標のマージン "
        "1/(2·beta) が float32 で inf になり、損失は nan です。0.1 を試して"
        "ください",
    "greedy":
        "GRPOConfig.temperature は {shown} です: float32 では最良より 1 "
        "ロジット低いトークンの確率が exp(-1/{shown}) = 0 になり、同じプロンプト"
        "の補完がすべて同じで、アドバンテージはすべて 0 です (学ぶものが"
        "ありません)。{least} 以上にしてください (1.0 は方策そのままに"
        "サンプリングします)",
    "smoothing_too_big":
        "DPOConfig.label_smoothing は 0.5 未満でなければなりませんが、"
        "{value} でした。0.5 ではラベルが反転する確率としない確率が等しく、"
        "robust DPO は 1 − 2·0.5 = 0 で割ることになります。0.1 を試して"
        "ください",
    "exo_needs_smoothing":
        "DPOConfig.loss_type='exo_pair' には 0 より大きい label_smoothing が"
        "必要です。これは EXO の ε で、log(0) で損失が inf になります。"
        "EXO の論文の値 1e-3 を試してください",
    "tau_unread":
        "DPOConfig.discopop_tau={value} は loss_type={loss_type!r} では"
        "使われません。これを読むのは 'discopop' だけです。"
        "loss_type='discopop' にするか、discopop_tau を既定値（{default}）の"
        "ままにしてください",
    "smoothing_unread":
        "DPOConfig.label_smoothing={value} は loss_type={loss_type!r} では"
        "使われません。これを読むのは {readers} だけです。"
        "loss_type='robust' にするか、label_smoothing=0 にしてください",
    "pairs_same":
        "{name} の {row} 行目: chosen と rejected がどちらも {text!r} です"
        "（このようなペアが {count} 個）。違いのないペアから DPO は何も"
        "学習しません。その行を除くか、別の rejected を与えてください",
    "tokens_same":
        "{name} の {row} 行目: chosen {chosen!r} と rejected {rejected!r} "
        "が同じトークン列になります（このようなペアが {count} 個。たとえば"
        "トークナイザーの語彙にない文字は、すべて 1 つの unk トークンに"
        "なります）。DPO はここから何も学習しません。その行を除くか、"
        "トークナイザーが知っている文字で書いてください",
    "cut_equal":
        "{name}: max_length={max_length} トークンで切ると、{total} 個の"
        "ペアのうち {equal} 個で chosen と rejected が同じになります"
        "（最初は {first} 行目）。DPOConfig.max_length を大きくしてください",
    "cut_warning":
        "{name}: {total} 個のペアのうち {cuts} 個が "
        "max_length={max_length} トークンで切られ、末尾（<eos>）を失い"
        "ました。全体を残すには DPOConfig.max_length を大きくしてください",
    "epsilon_high_unread":
        "GRPOConfig.epsilon_high={value} は loss_type={loss_type!r} では"
        "使われません。kit のクリップは epsilon による対称なものです（TRL は"
        "epsilon_high をクリップの上限にも使います）。これを読むのは "
        "'cispo' だけです。loss_type='cispo' にするか、epsilon_high=None に"
        "してください",
    "loss_field_unread":
        "GRPOConfig.{name}={value} は loss_type={loss_type!r} では使われ"
        "ません。これを読むのは {readers} だけです。loss_type="
        "{readers[0]!r} にするか、{name} を既定値 ({default}) のままに"
        "してください",
    "kl_correction_unread":
        "GRPOConfig.use_bias_correction_kl=True は beta=0 では何もしません。"
        "これは KL 項を補正しますが、beta=0 ではその項がありません。beta を "
        "0 より大きく (0.04 を試してください) するか、"
        "use_bias_correction_kl=False にしてください",
    "reward_weights":
        "GRPOConfig.reward_weights は None か、報酬関数ごとに 1 つの有限の数"
        "のリストでなければなりませんが、{shown} でした。たとえば関数が 2 つ"
        "なら [1.0, 0.5]",
    "reward_weights_zero":
        "GRPOConfig.reward_weights がすべて 0 です ({shown})。どの報酬も"
        "アドバンテージに届かず、何も学びません。少なくとも 1 つの関数に重み"
        "をつけてください (たとえば 1.0)",
    "reward_weights_count":
        "GRPOConfig.reward_weights の重みは {have} 個ですが、報酬関数は "
        "{wanted} 個 ({names}) です。reward_funcs の順に、関数ごとに 1 つの"
        "重みを与えてください",
    "scale_rewards_unread":
        "GRPOConfig.scale_rewards={value!r} は multi_objective_aggregation="
        "'normalize_then_sum' では使われません。これは TRL 1.16 と同じく、"
        "各関数の報酬をグループの広がりで、その和をバッチの広がりで割ります。"
        "scale_rewards='group' にするか、multi_objective_aggregation="
        "'sum_then_normalize' にしてください",
    "greedy_top_k":
        "GRPOConfig.top_k=1 は最も確率の高いトークンだけを残します。"
        "サンプリングが貪欲になり、同じプロンプトの補完がすべて同じで、"
        "アドバンテージはすべて 0 です (学ぶものがありません)。0 (すべての"
        "トークン) か 2 以上にしてください",
    "nonfinite":
        "ステップ {step} で学習を止めました。損失か勾配が nan または inf "
        "です（{what}）。重みは更新していません。learning_rate を下げるか、"
        "損失や報酬の中の log(0)、0 での割り算、0.1 から大きく離れた beta "
        "を探してください",
}


def refusal(key, **fields):
    """The ValueError of MESSAGES[key], in the kit's language."""
    return ValueError(i18n.text(MESSAGES, key, **fields))


# What a rule's field must be, and its fix (the rules' last item), keyed by
# their English: the rules read as English, and a refusal speaks the kit's
# language.
FIXES = {"en": {}, "ja": {
    "a whole number": "整数",
    "a finite number": "有限の数",
    "write it without quotes": "引用符なしで書いてください",
    "try 8": "8 を試してください",
    "try 32": "32 を試してください",
    "try 0.2": "0.2 を試してください",
    "try 5.0": "5.0 を試してください",
    "try 1.0": "1.0 を試してください",
    "try 1.05": "1.05 を試してください",
    "try 0.1": "0.1 を試してください",
    "1 means no accumulation": "1 は勾配累積なしです",
    "advantages compare completions of the same prompt":
        "アドバンテージは同じプロンプトの補完どうしを比べます",
    "1 generates for every micro-step":
        "1 ならマイクロバッチごとに生成します",
    "1.0 samples the policy as it is":
        "1.0 なら方策そのままにサンプリングします",
    "0 turns the KL off; try 0.04":
        "0 で KL 項がなくなります。0.04 を試してください",
    "prompt + completion tokens, e.g. 64":
        "プロンプトと補完のトークン数の合計、たとえば 64",
    "the chance a label is flipped, e.g. 0.1":
        "ラベルが反転する確率、たとえば 0.1",
    "1.0 keeps every token": "1.0 ならすべてのトークンを残します",
    "0 keeps every token": "0 ならすべてのトークンを残します",
    "1.0 leaves the logits as they are": "1.0 ならロジットはそのままです",
    "try 0.05": "0.05 を試してください",
}}
FIXES["en"] = {english: english for english in FIXES["ja"]}


def in_words(english):
    """A rule's English words in the kit's language (as they are when the
    table does not have them)."""
    return i18n.text(FIXES, english) if english in FIXES["en"] else english


# ------------------------------------------------------------------ configs

# TrainingArguments' counts that the kit's formulas multiply and divide by:
# checked before any of them is used.
BATCH_RULES = [
    ("per_device_train_batch_size", int, ">= 1", "try 8"),
    ("gradient_accumulation_steps", int, ">= 1",
     "1 means no accumulation"),
]
_BOUNDS = {">": operator.gt, ">=": operator.ge, "<=": operator.le}


def check_fields(config, rules):
    """Refuse a setting of the wrong type or range, naming it and the fix.

    Each rule is (field, kind, bound, fix): kind `int` for counts (a whole
    number; True is not one), `float` for a finite number; bound ">= 1".
    """
    for field, kind, bound, fix in rules:
        value = getattr(config, field)
        if _fits(value, kind, bound):
            if kind is float:
                check_float32(config, field, bound, fix)
            continue
        what = in_words("a whole number" if kind is int
                        else "a finite number")
        shown = _shown(value)
        if not _is_number(value, kind):
            shown += f" ({type(value).__name__}"
            shown += (": " + in_words("write it without quotes") + ")"
                      if isinstance(value, str) else ")")
        raise refusal("field", owner=type(config).__name__, field=field,
                      what=what, bound=bound, shown=shown,
                      fix=in_words(fix))


def check_float32(config, field, bound, fix):
    """A float setting must stay what it is in float32: 1e300 becomes inf
    there, and 1e-50 becomes 0 (which "> 0" refuses), silently."""
    value = getattr(config, field)
    as32 = float(torch.tensor(float(value), dtype=torch.float32))
    if math.isinf(as32) or (as32 == 0 and value != 0 and bound.startswith(
            ">") and not bound.startswith(">=")):
        raise refusal("float32", owner=type(config).__name__, field=field,
                      shown=_shown(value), as32=_shown(as32),
                      fix=in_words(fix))


def check_ipo_beta(beta):
    """IPO's loss aims the margin at 1/(2·beta): that must be a number."""
    if torch.isinf(1 / (2 * torch.tensor(beta, dtype=torch.float32))):
        raise refusal("ipo_beta", shown=f"{beta:g}")


def check_choice(config, name, choices):
    """Refuse a setting that is not one of `choices`' keys, listing them
    (a list or None too, which `in` would raise TypeError on)."""
    value = getattr(config, name)
    if not isinstance(value, str) or value not in choices:
        raise refusal("choice", owner=type(config).__name__, name=name,
                      value=value, choices=", ".join(map(repr, choices)))


def _is_number(value, kind):
    wanted = numbers.Integral if kind is int else numbers.Real
    return isinstance(value, wanted) and not isinstance(value, bool)


def _fits(value, kind, bound):
    op, limit = bound.split()
    return (_is_number(value, kind) and _finite(value)
            and _BOUNDS[op](value, float(limit)))


def _finite(value):
    """Not nan, not inf, and not an int too big for a float (10**400)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


# ------------------------------------------------------------------ inputs

def as_dataset(name, data):
    """The inputs the trainers accept, as a Dataset, or one line why not.

    A list of dicts and a DataFrame are converted (Dataset.from_list,
    Dataset.from_pandas); a streamed IterableDataset is refused: the
    samplers need to know how many rows there are.
    """
    pandas = sys.modules.get("pandas")  # not imported: no DataFrame exists
    if isinstance(data, Dataset):
        return data
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return Dataset.from_pandas(data, preserve_index=False)
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return Dataset.from_list(data)
    if isinstance(data, IterableDataset):
        raise refusal("streamed", name=name)
    if isinstance(data, DatasetDict):
        raise refusal("splits", name=name, splits=list(data),
                      first=next(iter(data), "train"))
    raise refusal("not_a_dataset", name=name, kind=type(data).__name__)


def check_tokenizer(trainer, tokenizer):
    if tokenizer is None or tokenizer.pad_token_id is None:
        raise refusal("no_pad_token", trainer=trainer)


def check_dataset(name, dataset, columns, algorithm, rows):
    """-> the dataset: one we accept, with the columns, rows, and text."""
    if isinstance(dataset, list) and not dataset:
        raise refusal("empty", name=name, algorithm=algorithm, rows=rows)
    dataset = as_dataset(name, dataset)
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise refusal("no_column", name=name, column=missing[0],
                      algorithm=algorithm, columns=list(columns),
                      has=dataset.column_names)
    if len(dataset) == 0:
        raise refusal("empty", name=name, algorithm=algorithm, rows=rows)
    for column in columns:
        if _all_text(dataset, column):
            continue  # Arrow knows: no need to look at every row
        for index, value in enumerate(whole_column(dataset, column)):
            if not isinstance(value, str):
                raise refusal("not_text", name=name, index=index,
                              column=column, value=value,
                              kind=type(value).__name__)
    return dataset


def whole_column(dataset, column):
    """A column as a list, read in one go: iterating `dataset[column]`
    formats it row by row, about 150x slower (1 s for DPO's 72k pairs)."""
    return dataset.with_format("arrow")[column].to_pylist()


def _all_text(dataset, column):
    """True when the column's Arrow type is text and no cell is missing."""
    feature = getattr(dataset, "features", {}).get(column)
    return (getattr(feature, "dtype", None) in ("string", "large_string")
            and dataset.with_format("arrow")[column].null_count == 0)


def check_prompt_length(name, index, length, limit, field, room=0):
    """Refuse row `index` if its prompt and `room` more exceed `limit`."""
    if length + room > limit:
        raise refusal("prompt_too_long", name=name, index=index,
                      length=length, short=field.split(".")[1], limit=limit,
                      field=field)


def warn_unknown_text(name, tokenizer, dataset, columns):
    """Warn, with counts, when text falls outside the tokenizer's vocabulary.

    The toy tokenizer turns every character it does not know into one
    <unk>, so "42 apples" and "42 pears!" look the same to the model.
    Tokenizers without an unk token, or with byte fallback, lose nothing.
    """
    unk = tokenizer.unk_token_id
    if unk is None or not tokenizer.is_fast:  # offsets need a fast one
        return
    rows, counts, examples, first = set(), {}, {}, None
    for column in columns:
        texts = whole_column(dataset, column)
        lost = _unknown_spans(tokenizer, list(dict.fromkeys(texts)), unk)
        hit = [i for i, text in enumerate(texts) if text in lost]
        if not hit:
            continue
        rows.update(hit)
        counts[column] = (len(hit), sum(len("".join(lost[texts[i]]))
                                        for i in hit))
        first = first or (hit[0], column, texts[hit[0]])
        for span in (s for i in hit for s in lost[texts[i]]):
            if len(examples) >= 5:  # enough to see what is going on
                break
            examples.setdefault(span, None)
    if not rows:
        return
    per_column = "; ".join(f"{c!r}: {k} characters in {n} rows"
                           for c, (n, k) in counts.items())
    row, column, first_text = first
    warnings.warn(i18n.text(
        MESSAGES, "unknown_text", name=name, rows=len(rows),
        total=len(dataset), unk=tokenizer.unk_token, per_column=per_column,
        row=row, column=column, start=first_text[:40],
        examples=", ".join(map(repr, examples))), stacklevel=3)


def _unknown_spans(tokenizer, texts, unk):
    """{text: [the pieces of it that became unk]}, for texts with any."""
    encoded = tokenizer(texts, add_special_tokens=False,
                        return_attention_mask=False,
                        return_offsets_mapping=True)
    lost = {}
    for text, ids, offsets in zip(texts, encoded["input_ids"],
                                  encoded["offset_mapping"]):
        spans = [text[a:b] for i, (a, b) in zip(ids, offsets) if i == unk]
        if spans:
            lost[text] = spans
    return lost


# ------------------------------------------------------------------ rewards

def reward_name(func):
    """A reward function's name; a partial is named after what it wraps."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__name__", type(func).__name__)


def reward_names(reward_funcs):
    """One name per function, made unique: <lambda>, <lambda>_2, ...

    Metrics are keyed by these names (rewards/<name>), so two functions
    with the same name would otherwise log as one.
    """
    names = []
    for func in reward_funcs:
        name, n = reward_name(func), 1
        while (name if n == 1 else f"{name}_{n}") in names:
            n += 1
        names.append(name if n == 1 else f"{name}_{n}")
    return names


def check_reward_funcs(reward_funcs):
    """-> a list of at least one callable reward function."""
    funcs = (list(reward_funcs) if isinstance(reward_funcs, (list, tuple))
             else [reward_funcs])
    if not funcs:
        raise refusal("no_rewards")
    for i, func in enumerate(funcs):
        if not callable(func):
            raise refusal("not_callable", i=i, shown=_shown(func),
                          kind=type(func).__name__)
    return funcs


def check_reward_weights(weights):
    """GRPOConfig.reward_weights: None, or finite numbers not all 0 -> a
    list of floats (a tuple would not equal its saved list on resume)."""
    if weights is None:
        return None
    if (not isinstance(weights, (list, tuple)) or not weights
            or not all(_is_number(w, float) and _within_float32(w)
                       for w in weights)):
        raise refusal("reward_weights", shown=_shown(weights))
    if not any(weights):
        raise refusal("reward_weights_zero", shown=_shown(list(weights)))
    return [float(w) for w in weights]


def check_reward_weights_count(weights, names):
    """One weight per reward function (GRPOTrainer knows the functions)."""
    if weights is not None and len(weights) != len(names):
        raise refusal("reward_weights_count", have=len(weights),
                      wanted=len(names), names=", ".join(names))


def score(reward_funcs, prompts, completions, columns, dataset="dataset",
          timeout=None):
    """Call every reward function; refuse an answer we cannot train on,
    naming `dataset` (train_dataset, eval_dataset) where the rows came from.

    Each function gets its own copies of the lists, so one that edits them
    in place cannot change what the next one sees, and `timeout` seconds
    a call (GRPOConfig.reward_timeout): one that never returns is stopped
    and named, not waited on.
    Returns (B, F): one column per reward function.
    """
    # the checkers' nesting alarm (a reward may run inside a check's limit)
    from kit.checks.clock import TimeLimit, time_limit
    scores = []
    for func, name in zip(reward_funcs, reward_names(reward_funcs)):
        try:
            with (time_limit(timeout) if timeout else nullcontext()) as limit:
                values = func(prompts=list(prompts),
                              completions=list(completions),
                              **copy.deepcopy(columns))
        except TimeLimit as expired:
            if limit is None or expired.limit is not limit:
                raise  # an outer limit's (a check's): not ours to name
            raise refusal("reward_timeout", name=name, seconds=timeout,
                          n=len(completions)) from None
        except Exception as error:
            raise refusal("reward_raised", name=name,
                          kind=type(error).__name__, error=error,
                          dataset=dataset, columns=sorted(columns)) from error
        scores.append(torch.tensor(_reward_values(name, values, completions),
                                   dtype=torch.float32))
    scores = torch.stack(scores, dim=1)  # (B, F)
    check_scored(scores, reward_names(reward_funcs), completions)
    return scores


def check_scored(scores, names, completions):
    """Each completion scored by at least one function: a None (nan) is
    "no opinion" (TRL's), and a completion with none but opinions would
    train on nothing (TRL warns and gives it advantage 0)."""
    unscored = scores.isnan().all(dim=1).nonzero()
    if len(unscored):
        i = int(unscored[0])
        raise refusal("reward_unscored", name=names[0], i=i,
                      completion=completions[i], count=len(names))


def check_prompts(name, dataset, tokenizer, args, reward_funcs):
    """GRPO's datasets -> the dataset; refuse bad input before training."""
    dataset = check_dataset(name, dataset, ["prompt"], "GRPO", "prompts")
    check_no_empty_prompts(name, dataset)
    warn_unknown_text(name, tokenizer, dataset, ["prompt"])
    encoded = tokenizer(whole_column(dataset, "prompt"))["input_ids"]
    lengths = [len(ids) for ids in encoded]
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    check_prompt_length(name, longest, lengths[longest],
                        args.max_prompt_length, "GRPOConfig.max_prompt_length")
    # A dry run of every reward function on two rows, so that a broken one
    # fails now and not after the first generate().
    rows = dataset.select(range(min(2, len(dataset))))
    columns = {key: list(rows[key]) for key in rows.column_names
               if key != "prompt"}
    score(reward_funcs, list(rows["prompt"]), ["0"] * len(rows), columns,
          dataset=name, timeout=getattr(args, "reward_timeout", None))
    return dataset


def check_no_empty_prompts(name, dataset):
    """Every prompt asks something: "" (or only spaces) was trained on,
    the policy generating from <bos> alone, a run that learns nothing of
    the task."""
    prompts = whole_column(dataset, "prompt")
    empty = [i for i, prompt in enumerate(prompts) if not prompt.strip()]
    if empty:
        raise refusal("empty_prompt", name=name, index=empty[0],
                      prompt=prompts[empty[0]], count=len(empty))


def check_enough_prompts(dataset, needed):
    """GRPO's train_dataset must fill one generation's big batch."""
    if dataset is not None and len(dataset) < needed:
        raise refusal("enough_prompts", have=len(dataset), needed=needed)


def _reward_values(name, values, completions):
    """One float per completion, from a list, tuple, 1-D array or tensor."""
    if hasattr(values, "ndim") and values.ndim != 1:
        raise refusal("reward_shape", name=name, shape=tuple(values.shape))
    if hasattr(values, "tolist"):  # numpy arrays and tensors
        try:
            values = values.tolist()
        except Exception as error:  # a meta tensor has no values to read
            raise refusal("reward_unreadable", name=name,
                          kind=type(values).__name__,
                          error_kind=type(error).__name__,
                          error=error) from error
    if not isinstance(values, (list, tuple)):
        raise refusal("reward_not_a_list", name=name,
                      kind=type(values).__name__)
    if len(values) != len(completions):
        raise refusal("reward_count", name=name, have=len(values),
                      wanted=len(completions))
    for i, value in enumerate(values):
        if value is None:  # TRL's "no opinion": nan, skipped (kit.losses)
            continue
        # value != value: nan, without math.isnan's overflow on 10**400
        if not isinstance(value, numbers.Real) or value != value:
            raise refusal("reward_not_a_number", name=name,
                          shown=_shown(value), i=i,
                          completion=completions[i])
        if not _within_float32(value):  # inf, or inf once in float32
            raise refusal("reward_not_finite", name=name,
                          shown=_shown(value), i=i,
                          completion=completions[i])
    return [math.nan if v is None else float(v) for v in values]


def _within_float32(value):
    """Finite in float32, whatever it came as: compared as a Python number
    (np.float16(70000) is float16's inf, which numpy 2 compares with
    FLOAT32_MAX in float16, where that is inf too)."""
    try:
        return abs(float(value)) <= FLOAT32_MAX
    except OverflowError:  # an int beyond any float: 10**400
        return False


def _shown(value):
    """repr(value), cut short: 10**400 has 401 digits."""
    text = repr(value)
    return text if len(text) <= 40 else (
        f"{text[:20]}... ({len(text)} characters)")

