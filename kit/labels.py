"""What the kit's figures and notebook helpers say, in English and Japanese.

One table for everything drawn (`kit.live`, `kit.explore`, `kit.bench`)
and one for what `kit.course` prints in a notebook, shaped for `kit.i18n`.
The plots share one table because they share words ("optimizer step",
"loss", "generate() calls"): a term is translated once, the same way in
every figure. API names, metric keys and symbols (β, ε, G, k, GA) are not
labels: they stay as the code writes them, in every language.

Japanese terms follow the Japanese transformers docs: 損失 (loss),
勾配累積 (gradient accumulation), オプティマイザのステップ (optimizer
step; 学習ステップ is `training_step`, one micro-batch),
報酬 (reward), 生成 (generation).

`label(key, **fields)` looks a plot label up. `fonts()`, called where a
figure is made, gives matplotlib a Japanese fallback font in Japanese
(`matplotlib-fontja`, the `ja` extra), so no glyph is drawn as a box.
"""

import unicodedata
import warnings

from kit import i18n

PLOTS = {"en": {
    # kit.live: the live plot
    "loss": "loss",
    "optimizer_step": "optimizer step",
    "grpo_loss_note": "GRPO's loss is ≈ 0: advantages average 0 in a group",
    "generation_title": "generate(): {calls} calls, {seconds:.2f} s",
    "cumulative": "cumulative",
    "seconds_in_generate": "seconds in generate()",
    "per_step_right": "per step (right)",
    "per_step": "per step",
    "progress": "step {step} / {max_steps} · {elapsed} elapsed",
    "progress_left": "{text} · {left} left",
    "stopped_at": "stopped at {text}",
    "compare_title": "time spent in generate()",
    "seconds_cumulative": "seconds, cumulative",
    "run_calls": "{label}: {calls} calls",
    "no_runs": "no runs yet",
    # kit.explore, 01: gradient accumulation
    "ga_mean": "mean ÷ GA: ×{size:.2f}, off {off:.0%}",
    "ga_exact": "sum / num_items_in_batch: off {off:.0%}",
    "ga_big": "one big batch: 1/N each",
    "ga_xlabel": "labelled tokens (r = row; colour = micro-batch)",
    "ga_ylabel": "weight in the gradient",
    "ga_title": "micro-batches {split}: each token's share of the "
                "accumulated gradient (N = {n})",
    "ga_slider": "micro-batches",
    # 03: DPO
    "dpo_kit": "kit: {loss_type}",
    "dpo_snippet": "published snippet",
    "dpo_loss_title": "loss of one pair",
    "dpo_margin_long": "margin (π_c − ref_c) − (π_r − ref_r)",
    "dpo_margin": "margin",
    "dpo_chosen_kit": "chosen ↑ (kit)",
    "dpo_rejected_kit": "rejected ↓ (kit)",
    "dpo_chosen_snippet": "chosen ↑ (snippet)",
    "dpo_rejected_snippet": "rejected ↓ (snippet)",
    "dpo_weight_title": "gradient weight on each log-prob, β = {beta}",
    # 04: the sampler
    "sampler_generate": "generate() ▶",
    "sampler_row": "step {step} · slice {slice}",
    "sampler_xlabel": "the dataloader's batch: per_device_train_batch_size "
                      "× k = {rows} rows (colour = prompt; G in a row)",
    "sampler_title": "generate calls = N·GA/k = {N}·{GA}/{k} → {calls}; "
                     "the box: the slice each micro-step trains on",
    # 05: the clip
    "clip_band": "[1 − ε, 1 + ε], ε = {epsilon:g}",
    "clip_unclipped": "−ρA (no clip)",
    "clip_loss": "−min(ρA, clip(ρ)A)",
    "clip_flat": "gradient 0: no credit for moving further",
    "clip_xlabel": "ratio ρ = π / π_old",
    "clip_ylabel": "loss of one token",
    "clip_title": "GRPO's clipped surrogate, {advantage} (A = {A:+g})",
    # kit.bench: the table and the plot
    "bench_k": "k",
    "bench_calls": "generate calls",
    "bench_generation": "generation s/step",
    "bench_total": "total s/step",
    "bench_tokens": "tokens/s",
    "bench_ratio": "gen/step vs k=1",
    "bench_measured": "generation, measured",
    "bench_whole": "whole step, measured",
    "bench_ideal": "generation, ideal 1/k",
    "bench_seconds": "seconds per optimizer step",
    "bench_cost_title": "cost per step (median of runs)",
    "bench_calls_axis": "generate() calls",
    "bench_calls_title": "generate() calls in a run",
    "bench_xlabel": "steps_per_generation k",
    "bench_saved": "plot saved to {path}",
    "bench_not_saved": "bench: could not save the plot to {path} "
                       "({error}); give --plot a writable path",
    "bench_verdict": "Generation per step at k={k} is {ratio:.2f} of "
                     "k={k0}'s, against an ideal 1/k of {ideal:.3f} "
                     "({calls} generate() calls instead of {base_calls}).",
    # 07: the normalisers
    "norm_xlabel": "completion length (tokens)",
    "norm_weight_ylabel": "weight of one of its tokens",
    "norm_weight_title": "each token's weight in the step, GA = {GA}, "
                         "k = {k}",
    "norm_total_ylabel": "the completion's total weight",
    "norm_total_title": "each completion's weight "
                        "(dapo: / {tokens} tokens)",
}, "ja": {
    "loss": "損失",
    "optimizer_step": "オプティマイザのステップ",
    "grpo_loss_note": "GRPO の損失は ≈ 0: アドバンテージはグループ内で"
                      "平均 0",
    "generation_title": "generate(): {calls} 回, {seconds:.2f} 秒",
    "cumulative": "累積",
    "seconds_in_generate": "generate() の秒数",
    "per_step_right": "ステップあたり (右軸)",
    "per_step": "ステップあたり",
    "progress": "ステップ {step} / {max_steps} · 経過 {elapsed}",
    "progress_left": "{text} · 残り {left}",
    "stopped_at": "{text} で停止",
    "compare_title": "generate() にかかった時間",
    "seconds_cumulative": "秒 (累積)",
    "run_calls": "{label}: {calls} 回",
    "no_runs": "まだ実行がありません",
    "ga_mean": "平均 ÷ GA: ×{size:.2f}, ずれ {off:.0%}",
    "ga_exact": "合計 / num_items_in_batch: ずれ {off:.0%}",
    "ga_big": "1 つの大きなバッチ：各 1/N",
    "ga_xlabel": "ラベル付きトークン (r = 行、色 = マイクロバッチ)",
    "ga_ylabel": "勾配での重み",
    "ga_title": "マイクロバッチ {split}: 勾配累積で各トークンが占める"
                "割合 (N = {n})",
    "ga_slider": "マイクロバッチ",
    "dpo_kit": "kit: {loss_type}",
    "dpo_snippet": "公開されたスニペット",
    "dpo_loss_title": "1 ペアの損失",
    "dpo_margin_long": "マージン (π_c − ref_c) − (π_r − ref_r)",
    "dpo_margin": "マージン",
    "dpo_chosen_kit": "chosen ↑ (kit)",
    "dpo_rejected_kit": "rejected ↓ (kit)",
    "dpo_chosen_snippet": "chosen ↑ (スニペット)",
    "dpo_rejected_snippet": "rejected ↓ (スニペット)",
    "dpo_weight_title": "各対数確率にかかる勾配の重み, β = {beta}",
    "sampler_generate": "generate() ▶",
    "sampler_row": "ステップ {step} · スライス {slice}",
    "sampler_xlabel": "データローダーのバッチ: "
                      "per_device_train_batch_size × k = {rows} 行 "
                      "(色 = プロンプト, 1 行に G 個)",
    "sampler_title": "generate の呼び出し = N·GA/k = {N}·{GA}/{k} → "
                     "{calls}; 枠：各マイクロステップが学習するスライス",
    "clip_band": "[1 − ε, 1 + ε], ε = {epsilon:g}",
    "clip_unclipped": "−ρA (クリップなし)",
    "clip_loss": "−min(ρA, clip(ρ)A)",
    "clip_flat": "勾配 0: これ以上動かしても得るものがない",
    "clip_xlabel": "比率 ρ = π / π_old",
    "clip_ylabel": "1 トークンの損失",
    "clip_title": "GRPO のクリップ付き代理目的関数, {advantage} "
                  "(A = {A:+g})",
    "bench_k": "k",
    "bench_calls": "generate 回数",
    "bench_generation": "生成 秒/ステップ",
    "bench_total": "全体 秒/ステップ",
    "bench_tokens": "トークン/秒",
    "bench_ratio": "生成/ステップ (k=1 比)",
    "bench_measured": "生成 (実測)",
    "bench_whole": "ステップ全体 (実測)",
    "bench_ideal": "生成 (理想 1/k)",
    "bench_seconds": "オプティマイザのステップあたりの秒数",
    "bench_cost_title": "ステップあたりのコスト (実行の中央値)",
    "bench_calls_axis": "generate() の呼び出し回数",
    "bench_calls_title": "1 回の実行での generate() の呼び出し",
    "bench_xlabel": "steps_per_generation k",
    "bench_saved": "プロットを {path} に保存しました",
    "bench_not_saved": "bench: プロットを {path} に保存できませんでした "
                       "({error})。--plot に書き込めるパスを指定してください",
    "bench_verdict": "k={k} でのステップあたりの生成時間は k={k0} の "
                     "{ratio:.2f} 倍です (理想の 1/k は {ideal:.3f}; "
                     "generate() の呼び出しは {base_calls} 回から "
                     "{calls} 回へ)。",
    "norm_xlabel": "補完の長さ (トークン)",
    "norm_weight_ylabel": "そのトークン 1 つの重み",
    "norm_weight_title": "ステップ内の各トークンの重み, GA = {GA}, "
                         "k = {k}",
    "norm_total_ylabel": "補完全体の重み",
    "norm_total_title": "各補完の重み "
                        "(dapo は {tokens} トークンで割る)",
}}

# What kit.course prints in a notebook.
NOTEBOOK = {"en": {
    "not_done_yet": "⏸  Not done yet: this cell runs an exercise that still "
                    "raises NotImplementedError. Write it, run its cell, "
                    "then run this one again.",
    "setup": "device: {device} · preset: {preset}",
    "trl_missing": "TRL is not installed, so there is nothing to compare "
                   "with: `pip install .[trl]` (or `pip install trl`), then "
                   "run this cell again.",
    "not_done_beside_trl": "⏸  Not done yet: your {what} still raises "
                           "NotImplementedError. Finish it above, then run "
                           "this cell again.",
    "hidden_answer": "{stars} notebook {notebook} asks you to write this "
                     "(exercise {number}, {id}): it shows once yours passes",
    "no_font": "Japanese labels need a Japanese font: "
               "pip install matplotlib-fontja",
    # notebook 01's gradient comparison: accumulated vs one big batch
    "ga_exact": "the big batch's gradient: exact under accumulation",
    "ga_mean_trap": "×{ratio:.2f} the big batch's: the mean-loss trap "
                    "(nobody divided by the 2 accumulation steps)",
    "ga_close": "×{ratio:.2f} the big batch's and {off:.1%} off in "
                "direction: close (within {tolerance:.0%}), not equal",
    "ga_apart": "×{ratio:.2f} the big batch's, but {off:.0%} off in "
                "direction (close is within {tolerance:.0%}): another "
                "gradient than the big batch's",
    # notebook 06 offline, where it would train a Hub model
    "offline_hub_run": "Offline: the toy world above stands in for the real "
                       "model. Online (e.g. on Colab), this cell trains "
                       "HuggingFaceTB/SmolLM2-135M-Instruct on GSM8K.",
    # notebook 06's LoRA section: the memory of its two setups
    "two_models": "policy + frozen copy: {count:,} parameters, "
                  "{megabytes:.2f} MB",
    "lora_model": "LoRA policy: {count:,} parameters ({trained:,} "
                  "trained), {megabytes:.2f} MB",
    # notebook 06's LoRA section without peft
    "peft_missing": "peft is not installed, so this section has no LoRA "
                    "policy: `pip install .[peft]` (or `pip install peft`), "
                    "then run this cell again.",
    # kit.course.expect: a claim is the condition, written as code
    "expected": "⚠️  expected {claim}; saw {seen}: compare your code with "
                "the solution.",
    # kit.beside_trl: a learner's loss beside TRL's on one batch
    "trl_not_a_number": "❌ your {what} returned {kind}, not one number (a "
                        "0-d tensor): it must return the batch's loss",
    "trl_losses": "your {what}: {ours:.8f}   TRL's: {theirs:.8f}   "
                  "difference: {difference:.1e}",
    "trl_same": "✅ the same loss as TRL's, to within {tolerance:.1e}",
    "trl_apart": "❌ more than {tolerance:.1e} apart: your {what} computes "
                 "something else than TRL's on the same batch",
}, "ja": {
    "not_done_yet": "⏸  まだ終わっていません。このセルが使う演習は、まだ "
                    "NotImplementedError を送出します。演習を書いてその"
                    "セルを実行し、それからこのセルをもう一度実行して"
                    "ください。",
    "setup": "デバイス: {device} · プリセット: {preset}",
    "trl_missing": "TRL がインストールされていないため、比べる相手がありません: "
                   "`pip install .[trl]`（または `pip install trl`）を実行し、"
                   "このセルをもう一度実行してください。",
    "not_done_beside_trl": "⏸  まだ終わっていません: {what} はまだ "
                           "NotImplementedError を送出します。上で書き終えてから、"
                           "このセルをもう一度実行してください。",
    "hidden_answer": "{stars} ノートブック {notebook} の演習 {number}（{id}）"
                     "で書くコードです。書いた答えが合格すると表示されます",
    "no_font": "日本語のラベルには日本語フォントが必要です: "
               "pip install matplotlib-fontja",
    "ga_exact": "1 つの大きなバッチと同じ勾配です。勾配累積でも厳密に"
                "一致します",
    "ga_mean_trap": "大きなバッチの ×{ratio:.2f} です。平均損失の落とし穴"
                    "です（2 回の累積ステップで割った人がいません）",
    "ga_close": "大きなバッチの ×{ratio:.2f} で、向きが {off:.1%} ずれて"
                "います。近い（{tolerance:.0%} 以内）ものの、同じではありません",
    "ga_apart": "大きなバッチの ×{ratio:.2f} ですが、向きが {off:.0%} ずれて"
                "います（近いと言えるのは {tolerance:.0%} 以内）。大きな"
                "バッチとは別の勾配です",
    "offline_hub_run": "オフラインなので、上のトイ問題が実際のモデルの代わり"
                       "です。オンライン（Colab など）では、このセルは "
                       "HuggingFaceTB/SmolLM2-135M-Instruct を GSM8K で学習"
                       "します。",
    "two_models": "方策 + 凍結したコピー：パラメータ {count:,} 個、"
                  "{megabytes:.2f} MB",
    "lora_model": "LoRA の方策：パラメータ {count:,} 個（学習するのは "
                  "{trained:,} 個）、{megabytes:.2f} MB",
    "peft_missing": "peft がインストールされていないため、この節には LoRA "
                    "の方策がありません。`pip install .[peft]`（または "
                    "`pip install peft`）を実行してから、このセルをもう一度"
                    "実行してください。",
    "expected": "⚠️  {claim} のはずが、実際は {seen} でした。解答と見比べて"
                "ください。",
    "trl_not_a_number": "❌ {what} が返したのは {kind} で、数 1 つ（0 次元の"
                        "テンソル）ではありません。バッチの損失を返してくだ"
                        "さい",
    "trl_losses": "{what}: {ours:.8f}   TRL: {theirs:.8f}   "
                  "差: {difference:.1e}",
    "trl_same": "✅ TRL と同じ損失です（差は {tolerance:.1e} 以内）",
    "trl_apart": "❌ 差が {tolerance:.1e} を超えています。{what} は同じバッチ"
                 "で TRL と違うものを計算しています",
}}

TABLES = {"PLOTS": PLOTS, "NOTEBOOK": NOTEBOOK}
_font_found = None  # not tried yet


def label(key, **fields):
    """A plot label in the current language."""
    return i18n.text(PLOTS, key, **fields)


def say(key, **fields):
    """A line kit.course prints, in the current language."""
    return i18n.text(NOTEBOOK, key, **fields)


def fonts():
    """Before a figure is made: in Japanese, a font that draws it."""
    if i18n.language() == "ja":
        use_japanese_font()


def use_japanese_font():
    """Let matplotlib draw Japanese (once): the font matplotlib-fontja
    bundles becomes a fallback family after the usual one, so Latin text
    keeps its font (English figures look the same) and the glyphs it lacks
    come from the Japanese one. It holds for texts made after this runs:
    figures call `fonts()` when they are made. Without the package, one
    warning that says how to get it. True when the font is there."""
    global _font_found
    if _font_found is not None:
        return _font_found
    _font_found = False
    try:
        import matplotlib
        family = list(matplotlib.rcParams["font.family"])
        import matplotlib_fontja  # registers its font (and makes it the
    except ImportError:          # only family: undone below)
        warnings.warn(i18n.text(NOTEBOOK, "no_font"), stacklevel=3)
        return False
    matplotlib.rcParams["font.family"] = family + [
        matplotlib_fontja.matplotlib_fontja.FONT_NAME]
    _font_found = True
    return True


def width(text):
    """Columns `text` takes in a terminal: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def rjust(text, columns):
    """`text` right-aligned in `columns` terminal columns."""
    return " " * max(0, columns - width(text)) + text
