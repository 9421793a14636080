"""The grading machinery's lines, in one table for `kit.i18n.text`.

Keys say what a line is for ("verdict.passed", "refused.timeout",
"compare.shape"): the verdicts, refusals, comparisons and hints every
exercise shares. An exercise's own words (its hint ladder, each mistake's
title, why and hint, its judge's lines) sit beside its checker in
kit/checks/nb*.py, English beside Japanese (`words=` in core.exercise).
"""

MESSAGES = {"en": {
    # ------------------------------------------------ verdicts (report.py)
    # every verdict line carries a word, so it reads where the emoji font
    # is missing and the glyph shows as a box
    "verdict.passed": "✅ passed",
    "verdict.failed": "❌ failed",
    "verdict.not attempted": "⏸  not attempted",
    "verdict.line": "{verdict} · {id} {stars}: {message}",
    "note": "ℹ️  note: {note}",
    "help": "   {line}",

    # --------------------------------------------- what evaluate() says
    "matches": "matches the reference",
    # a right answer that agreed bit for bit (kit.checks.compare.agreement)
    "agree.exact": "exact",
    "stub": "replace the `raise NotImplementedError` with your code",
    # {heading}: the exercise's heading, so that after Run All a learner
    # finds where to start (issue 66)
    "still the stub": "still the stub: {stub} (under “{heading}”)",
    "time limit":
        "your code ran for more than {timeout:g} s (an endless loop?)",
    "time limit in":
        "your {where} did not return within {timeout:g} s (an endless "
        "loop?)",
    "raised": "your code raised {error}",
    "mistake": "{title} — {why}",
    "checker failed":
        "the checker itself failed ({error}): a bug in the kit, not in your "
        "answer; please report it",
    "uses.not done": "exercise {number} is not done yet: using the kit's "
                     "`{name}` to check this one",
    "uses.not passing": "exercise {number} does not pass its check: using "
                        "the kit's `{name}` to check this one",

    # ---------------------------- a cell that needs exercises (ready.py)
    "needs.first":
        "⏸  Not run yet: pass {exercises} first (its check cell says ✅), "
        "then run this cell again. Until then this run cannot learn, and "
        "its numbers would say nothing about your code.",
    "needs.heading": "{stars} Exercise {number} `{id}`",
    "needs.and": " and ",
    "needs.start": " Start at “{heading}”.",

    # ------------------------------------------------------- refusals
    "refused.unknown id":
        "there is no exercise {id!r}: the exercises are {known}",
    "refused.timeout":
        "check({id!r}, ..., timeout={timeout!r}): timeout is the seconds "
        "your code may run, a number > 0, e.g. timeout=60",
    "refused.hint level":
        "{id} has hints {levels}: try hint({id!r}, 1), not level {level!r}",
    "refused.unknown id.why": "no exercise {id!r}",
    "refused.timeout.why": "timeout={timeout!r}",
    "not checked": "not checked: {why}",
    "refused.strict": "check() refused: {why}",

    # ----------------------------------------- comparing (compare.py)
    "compare.in place":
        "your function changed its input `{name}` in place: work on new "
        "tensors (x = x * m, not x.mul_(m) or x[...] = ...) — the caller "
        "still needs its inputs",
    "defaults reset":
        "this kernel set {what}: the check ran with torch's defaults "
        "(float32 on the CPU), as the kit's reference does; your own runs "
        "keep yours",
    "compare.backward":
        "your code calls .backward(): return the loss instead — the "
        "Trainer calls .backward() on what compute_loss returns, once",
    "compare.value": "{name}: yours {actual!r}, expected {wanted!r}",
    "compare.no gradient": "{name}: your result carries no gradient",
    "compare.not a tensor": "{name} should be a torch.Tensor, got {kind}",
    "compare.not one number":
        "{name} should be one number (a 0-d tensor), got shape {shape}",
    "compare.shape": "{name} has shape {shape}, expected {expected}",
    "compare.dtype": "{name} has dtype {dtype}, expected {expected}",
    "compare.detached":
        "{name} carries no gradient: it was cut from the graph (.detach(), "
        ".item(), torch.tensor(...) or torch.no_grad()), so training cannot "
        "learn from it",
    "facts.raised": "your {what} raised {error}",
    "compare.close": "close (max difference {difference:.1e})",
    "compare.differs":
        "{name} differs from the reference: max difference {difference:.3g} "
        "(yours {actual}, expected {expected})",

    # --------------------------------- the answer's kind (blame.py)
    "kind.start": "check({id!r}, ...) expects ",
    "kind.class": "a class, a subclass of {base}",
    "kind.class method": "a class, a subclass of {base} with your {method}",
    "kind.instance":
        ", got an instance: pass the class itself, {name}, not {name}(...)",
    "kind.got": ", got {kind}",
    "kind.not a subclass":
        ", got the class {name}, which does not subclass {base}",
    "kind.function": "a function like {name}{signature}, got {kind}",
    "kind.dict": "a dict, got {kind}",
    "kind.the class": "the class {name}",
    "kind.the function": "the function {name}",

    # ------------------------------------------- hint(), help (advice.py)
    "hint.line": "hint {level}/{count}: {text}",
    "hint.named": "hint: {text}",
    # hint 2 after a named mistake: what check() measured, then its fix
    "hint.measured": "what the check measured: {line}. The fix: {fix}",
    "solution.header": "# the answer to {id}: paste it into its cell",
    # what the machinery can tell apart, and the hint for each where the
    # exercise names no rung of its own
    "symptom.detached":
        "the result carries no gradient: build it from the inputs with "
        "torch operations, with no .detach(), .item(), torch.tensor(...) or "
        "torch.no_grad() on the way (the Trainer calls .backward() on it)",
    "symptom.shape":
        "return what the docstring's `Shape:` line says: print x.shape and "
        "x.dtype on the way to see where they change",
    "symptom.backward":
        "delete the .backward() line and return the loss: computing it is "
        "this function's job, backpropagating it the Trainer's",
    "symptom.in_place":
        "leave the inputs as they came: build new tensors (x = "
        "x.masked_fill(m, 0), x = x * m) instead of editing them (x[...] = "
        "..., x.mul_(...)); the caller uses them again",
    "symptom.scaled":
        "yours is {factor:.4g}× the reference wherever it differs: the rest "
        "is right, so look for a constant factor (what you divide by, a sum "
        "where a mean belongs, an extra multiplier)",
    "symptom.timeout":
        "a loop whose condition never changes, or one over far more items "
        "than the inputs hold: print inside it on small inputs to see which",
    "symptom.crash":
        "read the error's last line, then run your code by hand on small "
        "inputs and print the shapes just before the line that raised",

    # ------------------------- what the numbers say (relations.py)
    "relation.line": "{line} — {detail}",
    "relation.setting":
        "right where {setting} = {right}, wrong where {setting} = {wrong}: "
        "the part of your code that {setting} changes is the part to read "
        "again",
    "relation.sign":
        "yours is the reference with its sign flipped: a minus missing or "
        "one too many (the Trainer minimises what you return)",
    "relation.factor":
        "a constant factor: yours is {factor:.4g} × the reference (× "
        "{inverse:.4g} would fix it)",
    "relation.factor_per_case":
        "in each case yours is the reference times its own factor ({factors}, "
        "…): a division by a count the cases vary (num_items_in_batch, a "
        "length, the number of rows) is missing, or is another count",
    "relation.per_row":
        "each row of yours is its own multiple of the reference's row "
        "({factors}, …): what differs is one number per completion — its "
        "normalisation (a length, a count), or its own ratio or clip — "
        "not the tokens inside it",
    "relation.gradient_only":
        "your values are right but not their gradient: part of the result "
        "is cut from the graph (.detach(), .item(), torch.no_grad()) or "
        "carries another gradient than the formula's",
    "relation.value_only":
        "your gradient is right but not the value: a term that carries no "
        "gradient (a constant, a detached copy) is added or left out",
    "relation.not_finite":
        "{name} is nan or inf where the reference is finite: a log of 0 or "
        "of a negative number, an exp that overflows, or a division by 0",
    "relation.broadcast":
        "{name} has shape {shape}, the reference {expected}: two tensors of "
        "different shapes broadcast into a bigger one (a (B, 1) against a "
        "(B,)?) — print the shapes on the way",
    "relation.reduced":
        "{name} has shape {shape}, the reference {expected}: a reduction over "
        "another dim, or one too many or too few",
    "relation.dtype":
        "{name} has dtype {dtype}: an integer result where a float belongs "
        "(a mask or a count used as it is: .float() it)",
    "relation.detached":
        "your result is cut from the graph (.detach(), .item(), "
        "torch.tensor(...) or torch.no_grad()): training cannot learn from it",
    "relation.crash_dim":
        "a dim the tensor does not have — {error}: print x.dim() and x.shape "
        "on the line that raised",
    "relation.crash_dtype":
        "a tensor of the wrong dtype — {error}: an integer tensor (ids, a "
        "mask, a count) where a float one belongs, or the other way round",
    "relation.crash_shapes":
        "two shapes that do not fit — {error}: print the shapes of the "
        "tensors on the line that raised; a shift, a slice or a dim differs "
        "from what the formula needs",
    "relation.crash_key":
        "a key that is not there — {error}: print the dict's keys() to see "
        "what it holds",
    "relation.flows":
        "your gradient flows into tokens where the reference's is 0: a clip "
        "or a mask that should stop it there does not (the clipped side of "
        "min(ratio × A, clip(ratio) × A), the padding)",
    "relation.stopped":
        "your gradient is 0 at tokens where the reference's flows: something "
        "stops it there (a clip on the wrong side, a mask too wide, a "
        "detached factor)",
    "relation.elsewhere":
        "your gradient is 0 at other tokens than the reference's: it flows "
        "where a clip or a mask stops it, and stops where it flows — the "
        "clip's side (which of ratio × A and clip(ratio) × A the min keeps), "
        "or the mask",
    "relation.flipped":
        "your gradient has the opposite sign at some tokens: a sign that "
        "depends on the token (an advantage's sign, a min taken as a max)",
    "relation.crash_none":
        "a None where a value belongs — {error}: a variable never set, or a "
        "function that returns nothing (a missing return)",
    "relation.crash_argument":
        "a call with arguments of the wrong kind or number — {error}: read "
        "the called function's signature (a tensor where a number belongs, "
        "None, arguments swapped)",
    "relation.crash_attribute":
        "a name the object does not have — {error}: print type(x) to see "
        "what it is",
    "relation.crash_kind":
        "a value of another kind than the line needs — {error}: a name "
        "there holds something else than you think (a model, a dict, a "
        "bool, a list): print type(x) of each",
    "relation.crash_unset":
        "a name used before it is set — {error}: set it on every path "
        "before the line that reads it, or read the name you meant",
}, "ja": {
    # The Japanese half, in the English half's order (a test holds it).
    # Terms as README.ja.md's glossary (from the Japanese transformers
    # docs): 損失、勾配累積、マイクロバッチ、コールバック、補完、方策,
    # 参照モデル、対数確率; code, API names and the {fields} stay as in
    # English. A new line: its English above, then the same key here with
    # the same {fields}; tests/test_i18n.py fails until both are there.
    "verdict.passed": "✅ 合格",
    "verdict.failed": "❌ 不合格",
    "verdict.not attempted": "⏸  未着手",
    "verdict.line": "{verdict} · {id} {stars}: {message}",
    "note": "ℹ️  注: {note}",
    "help": "   {line}",
    "matches": "参照実装と一致します",
    "agree.exact": "完全に一致",
    "stub": "`raise NotImplementedError` をあなたのコードに置き換えてください",
    "still the stub": "まだスタブのままです: {stub}（見出し「{heading}」の下）",
    "time limit":
        "あなたのコードが {timeout:g} 秒を超えて実行されました (無限ループ?)",
    "time limit in":
        "{where} が {timeout:g} 秒以内に戻りませんでした (無限ループ?)",
    "raised": "あなたのコードが {error} を送出しました",
    "mistake": "{title} — {why}",
    "checker failed":
        "チェッカー自体が失敗しました ({error}): あなたの解答ではなく kit "
        "のバグです。報告してください",
    "uses.not done":
        "演習 {number} はまだ終わっていません。この演習のチェックには kit の "
        "`{name}` を使います",
    "uses.not passing":
        "演習 {number} はチェックに合格していません。この演習のチェックには "
        "kit の `{name}` を使います",
    "needs.first":
        "⏸  まだ実行していません。先に {exercises} を合格させ（チェックの"
        "セルに ✅ が出ます）、それからこのセルをもう一度実行してください。"
        "それまでは学習が進まず、表示される数値もあなたのコードについて"
        "何も語りません。",
    "needs.heading": "{stars} 演習 {number} `{id}`",
    "needs.and": " と ",
    "needs.start": "「{heading}」から始めてください。",
    "refused.unknown id": "演習 {id!r} はありません。演習は {known} です",
    "refused.timeout":
        "check({id!r}, ..., timeout={timeout!r}): timeout "
        "はあなたのコードを実行してよい秒数で、0 より大きい数です (例: "
        "timeout=60)",
    "refused.hint level":
        "{id} のヒントは {levels} です。レベル {level!r} ではなく "
        "hint({id!r}, 1) を試してください",
    "refused.unknown id.why": "演習 {id!r} はありません",
    "refused.timeout.why": "timeout={timeout!r}",
    "not checked": "チェックしていません: {why}",
    "refused.strict": "check() が拒否しました: {why}",
    "compare.in place":
        "あなたの関数が入力 `{name}` をその場で書き換えました。"
        "新しいテンソルで計算してください (x.mul_(m) や x[...] = ... "
        "ではなく x = x * m)。呼び出し側はまだ入力を使います",
    "defaults reset":
        "このカーネルでは {what} が設定されています。チェックは kit の参照"
        "実装と同じく torch の既定（CPU 上の float32）で実行しました。"
        "学習ではその設定のままです",
    "compare.backward":
        "コードが .backward() を呼んでいます。損失を返してください。"
        "Trainer が compute_loss の返した値に .backward() を 1 回だけ呼びます",
    "compare.value": "{name}: あなたの値 {actual!r}, 期待値 {wanted!r}",
    "compare.no gradient": "{name}: あなたの結果は勾配を持っていません",
    "compare.not a tensor":
        "{name} は torch.Tensor であるべきですが、{kind} でした",
    "compare.not one number":
        "{name} は 1 つの数 (0 次元テンソル) であるべきですが、形状は "
        "{shape} でした",
    "compare.shape":
        "{name} の形状は {shape} ですが、期待されるのは {expected} です",
    "compare.dtype":
        "{name} の dtype は {dtype} ですが、期待されるのは {expected} です",
    "compare.detached":
        "{name} は勾配を持っていません。計算グラフから切り離されています "
        "(.detach(), .item(), torch.tensor(...) や torch.no_grad())。"
        "これでは学習できません",
    "facts.raised": "あなたの {what} が {error} を送出しました",
    "compare.close": "ほぼ一致 (最大の差 {difference:.1e})",
    "compare.differs":
        "{name} が参照実装と異なります。最大の差 {difference:.3g} "
        "(あなたの値 {actual}, 期待値 {expected})",
    "kind.start": "check({id!r}, ...) が受け取るのは ",
    "kind.class": "{base} のサブクラス (クラス) です",
    "kind.class method": "{method} を持つ {base} のサブクラス (クラス) です",
    "kind.instance":
        "が、インスタンスが渡されました: {name}(...) ではなくクラスそのもの "
        "{name} を渡してください",
    "kind.got": "が、{kind} が渡されました",
    "kind.not a subclass":
        "が、渡されたクラス {name} は {base} のサブクラスではありません",
    "kind.function":
        "{name}{signature} のような関数ですが、{kind} が渡されました",
    "kind.dict": "dict ですが、{kind} が渡されました",
    "kind.the class": "クラス {name}",
    "kind.the function": "関数 {name}",
    "hint.line": "ヒント {level}/{count}: {text}",
    "hint.named": "ヒント: {text}",
    "hint.measured": "チェックで測ったこと: {line}。直し方: {fix}",
    "solution.header": "# {id} の解答：演習のセルに貼り付けてください",
    "symptom.detached":
        "結果が勾配を持っていません。入力から torch の演算で作り、途中で "
        ".detach(), .item(), torch.tensor(...) や torch.no_grad() "
        "を使わないでください (Trainer はこれに .backward() を呼びます)",
    "symptom.shape":
        "docstring の `Shape:` 行にある形状を返してください。途中で x.shape "
        "と x.dtype を表示すると、どこで変わるかがわかります",
    "symptom.backward":
        ".backward() の行を消して、損失を返してください。損失を計算するのは"
        "この関数の仕事で、逆伝播は Trainer の仕事です",
    "symptom.in_place":
        "入力は受け取ったままにしてください。書き換える (x[...] = ..., "
        "x.mul_(...)) のではなく、新しいテンソルを作ります (x = "
        "x.masked_fill(m, 0), x = x * m)。呼び出し側がまた使います",
    "symptom.scaled":
        "異なる箇所ではどこでも参照実装の {factor:.4g} 倍です。"
        "それ以外は正しいので、定数倍を探してください (割る数、"
        "平均のはずの合計、余分な係数)",
    "symptom.timeout":
        "条件が変わらないループか、入力よりはるかに多くの要素を回すループです。"
        "小さな入力でループ内を表示して、どちらか確かめてください",
    "symptom.crash":
        "エラーの最後の行を読み、小さな入力で手元でコードを実行して、"
        "エラーの出た行の直前で形状を表示してください",
    "relation.line": "{line} — {detail}",
    "relation.setting":
        "{setting} = {right} では正しく、{setting} = {wrong} では間違っています。"
        "{setting} で変わる部分のコードを読み直してください",
    "relation.sign":
        "あなたの値は参照実装の符号を反転したものです。マイナスが足りないか"
        "多すぎます (Trainer は返された値を最小化します)",
    "relation.factor":
        "定数倍の違いです。あなたの値は参照実装の {factor:.4g} 倍です "
        "({inverse:.4g} 倍すると直ります)",
    "relation.factor_per_case":
        "ケースごとに、あなたの値は参照実装のそれぞれ別の倍数です ({factors}, "
        "…)。ケースによって変わる個数 (num_items_in_batch、長さ、行数) での"
        "割り算が抜けているか、別の個数で割っています",
    "relation.per_row":
        "各行が参照実装の行のそれぞれ別の倍数です ({factors}, …)。"
        "違うのは補完ごとの 1 つの数 (長さや個数による正規化、またはその"
        "補完自身の比率やクリップ) で、補完の中のトークンではありません",
    "relation.gradient_only":
        "値は正しいのに勾配が違います。結果の一部が計算グラフから切り離されて"
        "いる (.detach(), .item(), torch.no_grad()) か、式とは別の勾配を"
        "持っています",
    "relation.value_only":
        "勾配は正しいのに値が違います。勾配を持たない項 (定数や切り離した"
        "コピー) を足しているか、抜かしています",
    "relation.not_finite":
        "参照実装が有限の値のところで {name} が nan か inf です。0 や負の数の"
        " log、オーバーフローする exp、0 での割り算を探してください",
    "relation.broadcast":
        "{name} の形状は {shape}、参照実装は {expected} です。形状の違う"
        "2 つのテンソルがブロードキャストされて大きくなっています "
        "((B, 1) と (B,) など)。途中で形状を表示してください",
    "relation.reduced":
        "{name} の形状は {shape}、参照実装は {expected} です。別の dim で"
        "集約しているか、集約が多すぎるか足りません",
    "relation.dtype":
        "{name} の dtype が {dtype} です。float のはずの結果が整数になって"
        "います (マスクや個数をそのまま使っています。.float() にしてください)",
    "relation.detached":
        "結果が計算グラフから切り離されています (.detach(), .item(), "
        "torch.tensor(...) や torch.no_grad())。これでは学習できません",
    "relation.crash_dim":
        "テンソルにない dim を使っています ({error})。エラーの出た行で "
        "x.dim() と x.shape を表示してください",
    "relation.crash_dtype":
        "テンソルの dtype が違います ({error})。float のはずのところに"
        "整数のテンソル (ID、マスク、個数) があるか、その逆です",
    "relation.crash_shapes":
        "形状が合いません ({error})。エラーの出た行のテンソルの形状を表示して"
        "ください。シフト、スライス、dim のどれかが式の求めるものと違います",
    "relation.crash_key":
        "ないキーを読んでいます ({error})。dict の keys() を表示して、"
        "何が入っているか確かめてください",
    "relation.flows":
        "参照実装の勾配が 0 のトークンにも、あなたの勾配が流れています。"
        "そこで止めるはずのクリップかマスクが効いていません "
        "(min(ratio × A, clip(ratio) × A) のクリップされた側、パディング)",
    "relation.stopped":
        "参照実装の勾配が流れるトークンで、あなたの勾配が 0 です。何かが"
        "そこで止めています (逆側のクリップ、広すぎるマスク、切り離した係数)",
    "relation.elsewhere":
        "あなたの勾配が 0 になるトークンが参照実装と違います。クリップかマスクが"
        "止めるところで流れ、流れるところで止まっています。クリップの側 "
        "(min が ratio × A と clip(ratio) × A のどちらを残すか) か、マスクを"
        "確かめてください",
    "relation.flipped":
        "いくつかのトークンで勾配の符号が逆です。トークンによって変わる符号 "
        "(アドバンテージの符号、max になった min) を確かめてください",
    "relation.crash_none":
        "値のはずのところが None です ({error})。設定されていない変数か、"
        "何も返さない関数 (return の書き忘れ) です",
    "relation.crash_argument":
        "関数に渡す引数の種類か数が違います ({error})。呼んでいる関数の"
        "シグネチャを読んでください (数のはずのところのテンソル、None、"
        "入れ替わった引数など)",
    "relation.crash_attribute":
        "オブジェクトにない名前を使っています ({error})。type(x) を表示して、"
        "何のオブジェクトか確かめてください",
    "relation.crash_kind":
        "その行が必要とするものとは別の種類の値です ({error})。そこにある名前が"
        "思っているのとは別のもの (モデル、dict、bool、list) を持っています。"
        "それぞれの type(x) を表示してください",
    "relation.crash_unset":
        "値が設定される前に名前を使っています ({error})。それを読む行より前の"
        "どの経路でも設定するか、意図した名前を読んでください",
}}
