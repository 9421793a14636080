"""What the trainers' guards and configs say when they refuse, in
English and Japanese (kit.trainers.guards says it): apart, so the
guards read in one sitting."""

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
