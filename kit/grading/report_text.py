"""What `kit grade` says to an instructor, in English and Japanese.

One table for the terminal scorecard and class summary, the HTML report
(`kit.grading.gradebook`) and the grader's own lines (`kit.grading.grade`:
why a notebook could not be graded), shaped for `kit.i18n`. A separate table from the
plots' (`kit.labels`): an instructor reads these, about submissions, not a
learner about training.

Status words are data in the cards, the JSON and the CSV ("passed",
"failed", "crashed", "not attempted", "not graded"): only what is shown is
translated, with `status(word)`. Exercise and mistake ids stay as they are.
"""

from kit import i18n

REPORT = {"en": {
    # status words as shown (keys: the statuses check() records)
    "passed": "passed",
    "failed": "failed",
    # ran into an error before a verdict: its code did not parse or raised,
    # or the run stopped (the kernel died, a time limit) before its check
    "crashed": "crashed",
    "not attempted": "not attempted",
    "not graded": "not graded",
    # the terminal
    "attempt": "{n} attempt",
    "attempts": "{n} attempts",
    "headline": "Graded {complete} of {total} submissions.",
    "in_progress": "In progress: {graded} of {total} submissions graded "
                   "so far.",
    "headline_interrupted": "Interrupted: graded {complete} of {total} "
                            "submissions; {left} not graded (the run was "
                            "stopped).",
    "exit_1": "Exit code 1: {n} of {total} submissions stopped with an "
              "error (above); the grades before it are kept.",
    "exit_2": "Exit code 2: none of the {total} submissions could be "
              "graded.",
    "summary_counts": "{passed}/{submissions} passed, {failed} failed, "
                      "{not_attempted} not attempted",
    "summary_crashed": ", {n} crashed",
    "summary_not_graded": ", {n} not graded",
    "scorecard": "Scorecard for {submission}",
    "could_not_grade": "could not grade {submission}: {error}",
    "score": "{passed}/{total} passed",
    "errors": "Errors (the grades made before them are kept):",
    # the HTML page
    "chart_xlabel": "passed (% of submissions)",
    "chart_alt": "pass rate per exercise",
    "no_chart": "(no chart: {error})",
    "title": "Class report",
    "worst_first": "Most failed first: re-teach from the top.",
    "exercises": "Exercises",
    "exercise": "exercise",
    "most_common": "most common mistakes",
    "named_mistakes": "Named mistakes",
    "none_named": "None named.",
    "mistake": "mistake",
    "submissions": "submissions",
    "what_it_is": "what it is",
    "students": "Students",
    "legend": "One row per student: their files in one folder, or named "
              "alike but for the notebook (alice_01…, alice_03…). ✓ passed, "
              "✗ failed (with the named mistake), ! crashed (its code "
              "raised, or the run stopped), – not attempted, ? not graded; "
              "under each row, what the checkers said.",
    "student": "student",
    "score_column": "score",
    # kit.grading.grade: why a run or a file could not be graded
    "no_such_path": "no such notebook or folder: {path}",
    "empty_path": "an empty path (an unset variable?): name a notebook or "
                  "a class folder",
    "a_link": "not read: it is a symbolic link, and the grader reads only "
              "files that are in the class folder",
    "not_a_file": "not read: it is not a plain file (a FIFO, a device or a "
                  "socket)",
    # another name of a file that may lie anywhere: read as the grader
    # (root), it could be a file the student may not read
    "hard_link": "not read: the file has {links} names (a hard link), and "
                 "the grader reads only files of the class folder's own: "
                 "copy it in",
    "too_big": "not read: {size} MB, more than the {limit} MB a notebook "
               "may be",
    "no_notebooks": "no notebooks in {paths} (solutions/ and "
                    ".ipynb_checkpoints/ are skipped)",
    "binary": "not a notebook: binary, not JSON text",
    "unreadable": "cannot read it: {why}",
    "not_a_notebook": "not a notebook: {why}",
    "timeout": "{where} ran past the time limit ({timeout} s per cell): "
               "raise it with --timeout",
    # the cell was interrupted inside the learner's own code: a loop, most
    # likely, and a longer limit would only wait longer
    "timeout_in": "the student's {function}, defined in {defined}, ran "
                  "past the time limit ({timeout} s per cell), called from "
                  "{where}: an endless loop in the student's {function}?",
    "timeout_loop": "{where} ran past the time limit ({timeout} s per "
                    "cell) in its own code: an endless loop in it? (if it "
                    "only needs longer: --timeout)",
    "notebook_timeout": "the notebook ran past its time limit ({timeout} s "
                        "for all cells) in {where}: raise it with "
                        "--notebook-timeout",
    "dead_kernel": "the kernel died in {where} (a crash or out of memory), "
                   "no time limit was hit",
    "output_limit": "{where} printed more than {limit:,} characters (all "
                    "cells together), so the run was stopped",
    "could_not_run": "could not run it: {why}",
    "cell": "cell {n}",
    # counted as a reader counts them in JupyterLab: code cells only
    "code_cell": "code cell {n} (`{first}`)",
    "check_never_ran": "its check(...) never ran: an error before it?",
    "no_check_for_it": "no check(...) for it in this notebook",
    # grade lines a cell wrote without its check(...) (forged, or a
    # check called from another cell): kit.grading.verdicts
    "ignored_lines": " (ignored: grade lines on it that no check(...) of "
                     "their cell wrote, from {where})",
    "raised_in": "{error} in {where}: {why}",
    "grader_failed": "could not grade it: {why}",
    "no_checks": "no exercises found: no check(...) calls",
    "no_check_ran": "no exercises found: no check(...) call ran",
    "warm_unavailable": "kit grade: warm kernels unavailable ({error}), "
                        "starting each kernel cold",
    "interrupted": "Interrupted: {graded} of {total} submissions "
                   "graded{kept}.",
    "kept_in": ", kept in {paths}",
    "interrupted_before": "not graded: the run was interrupted before it "
                          "started",
    "interrupted_in": "not graded: the run was interrupted while "
                      "{where} ran",
    "not_graded_count": " ({n} of {total} submissions not graded)",
    "none_graded": "no submission could be graded",
    "walled": "isolation: each kernel in namespaces of its own, as user "
              "{user}: it sees no other process, grade file or /tmp, has "
              "no network, and writes only its own folder",
    "walled_self": "isolation: each kernel in namespaces of its own, as "
                   "you: it sees no other process, grade file or /tmp, has "
                   "no network, and writes only its own folder",
    "not_walled": "isolation: none beyond a process of its own (kernels run "
                  "as you: {why}); see docs/instructors.md, 'Student code "
                  "runs on your machine'",
    "not_written": "could not write {path}: {why}",
    # kit.cli: `python -m kit` run by a Python without torch & co.
    "wrong_python": "kit: this Python ({python}) has no {module}: run the "
                    "kit with the course's own, .venv/bin/python -m kit ... "
                    "(`make setup` makes it)",
}, "ja": {
    "passed": "合格",
    "failed": "不合格",
    "crashed": "エラーで停止",
    "not attempted": "未着手",
    "not graded": "採点不能",
    "attempt": "試行 {n} 回",
    "attempts": "試行 {n} 回",
    "headline": "{total} 件の提出のうち {complete} 件を採点しました。",
    "in_progress": "採点中: {total} 件の提出のうち {graded} 件を"
                   "採点済みです。",
    "headline_interrupted": "中断しました: {total} 件の提出のうち "
                            "{complete} 件を採点し、{left} 件は採点して"
                            "いません。",
    "exit_1": "終了コード 1: {total} 件の提出のうち {n} 件がエラーで"
              "止まりました (上記)。それより前の採点結果は残しています。",
    "exit_2": "終了コード 2: {total} 件の提出のどれも採点できません"
              "でした。",
    "summary_counts": "合格 {passed}/{submissions}、不合格 {failed}、"
                      "未着手 {not_attempted}",
    "summary_crashed": "、エラーで停止 {n}",
    "summary_not_graded": "、採点不能 {n}",
    "scorecard": "{submission} の成績",
    "could_not_grade": "{submission} を採点できませんでした: {error}",
    "score": "合格 {passed}/{total}",
    "errors": "エラー（それより前の採点結果は残しています）：",
    "chart_xlabel": "合格した提出の割合 (%)",
    "chart_alt": "演習ごとの合格率",
    "no_chart": "（グラフなし: {error}）",
    "title": "クラスの成績レポート",
    "worst_first": "不合格の多い順に並べています。上から順に教え直して"
                   "ください。",
    "exercises": "演習",
    "exercise": "演習",
    "most_common": "多かった間違い",
    "named_mistakes": "チェッカーが見分けた間違い",
    "none_named": "チェッカーが見分けた間違いはありません。",
    "mistake": "間違い",
    "submissions": "提出数",
    "what_it_is": "内容",
    "students": "受講者",
    "legend": "1 行が受講者 1 人分です（同じフォルダーのファイル、または"
              "ノートブック名以外が同じ名前のファイル：alice_01…、"
              "alice_03…）。✓ 合格、✗ 不合格（見分けた間違いの名前とともに）、"
              "! エラーで停止（コードがエラーを出したか、実行が止まった）、"
              "– 未着手、? 採点不能。各行の下にチェッカーのメッセージを"
              "示します。",
    "student": "受講者",
    "score_column": "得点",
    "no_such_path": "そのノートブックもフォルダーもありません: {path}",
    "empty_path": "パスが空です (変数が未設定?): ノートブックかクラスの"
                  "フォルダーを指定してください",
    "a_link": "読みませんでした。シンボリックリンクです。採点ツールは"
              "クラスのフォルダーの中にあるファイルだけを読みます",
    "not_a_file": "読みませんでした。普通のファイルではありません (FIFO、"
                  "デバイス、ソケット)",
    "hard_link": "読みませんでした。このファイルには名前が {links} 個あります "
                 "(ハードリンク)。採点ツールはクラスのフォルダー自身の"
                 "ファイルだけを読みます。コピーして入れてください",
    "too_big": "読みませんでした: {size} MB あり、ノートブックの上限 "
               "{limit} MB を超えています",
    "no_notebooks": "{paths} にノートブックがありません (solutions/ と "
                    ".ipynb_checkpoints/ は除きます)",
    "binary": "ノートブックではありません: JSON テキストでなくバイナリです",
    "unreadable": "読み込めません: {why}",
    "not_a_notebook": "ノートブックではありません: {why}",
    "timeout": "{where} が制限時間 (セルあたり {timeout} 秒) を超えました: "
               "--timeout で延ばしてください",
    "timeout_in": "{defined} で定義された受講者の {function} が制限時間 "
                  "(セルあたり {timeout} 秒) を超えました。呼び出し元は "
                  "{where} です。受講者の {function} が無限ループになって"
                  "いませんか",
    "timeout_loop": "{where} が自分のコードの中で制限時間 (セルあたり "
                    "{timeout} 秒) を超えました。無限ループになって"
                    "いませんか (時間が足りないだけなら --timeout)",
    "notebook_timeout": "ノートブックが {where} で制限時間 (全セルで "
                        "{timeout} 秒) を超えました: --notebook-timeout "
                        "で延ばしてください",
    "dead_kernel": "{where} でカーネルが停止しました (クラッシュまたは"
                   "メモリ不足。制限時間には達していません)",
    "output_limit": "{where} が {limit:,} 文字を超えて出力したため "
                    "(全セルの合計)、実行を止めました",
    "could_not_run": "実行できませんでした: {why}",
    "cell": "セル {n}",
    "code_cell": "コードセル {n} (`{first}`)",
    "check_never_ran": "check(...) が実行されませんでした。その前でエラーが"
                       "出ていませんか",
    "no_check_for_it": "このノートブックにはこの演習の check(...) がありません",
    "ignored_lines": "（{where} の採点行は、そのセルの check(...) が書いた"
                     "ものではないため無視しました）",
    "raised_in": "{where} で {error}: {why}",
    "grader_failed": "採点できませんでした: {why}",
    "no_checks": "演習が見つかりません: check(...) の呼び出しがありません",
    "no_check_ran": "演習が見つかりません: check(...) が一度も"
                    "実行されませんでした",
    "warm_unavailable": "kit grade: ウォームカーネルが使えません "
                        "({error})。カーネルを毎回コールドで起動します",
    "interrupted": "中断しました: {total} 件の提出のうち {graded} 件を"
                   "採点済み{kept}。",
    "kept_in": " (結果は {paths} に保存)",
    "interrupted_before": "採点していません。始まる前に実行を中断しました",
    "interrupted_in": "採点していません。{where} の実行中に中断しました",
    "not_graded_count": " (採点していない提出は {total} 件のうち {n} 件)",
    "none_graded": "採点できた提出がありません",
    "walled": "分離：各カーネルは専用の名前空間でユーザー {user} として"
              "実行されます。ほかのプロセス、採点ファイル、/tmp は見えず、"
              "ネットワークにもつながらず、自分のフォルダーにだけ書き込めます",
    "walled_self": "分離：各カーネルは専用の名前空間であなたとして実行されます。"
                   "ほかのプロセス、採点ファイル、/tmp は見えず、ネットワークにも"
                   "つながらず、自分のフォルダーにだけ書き込めます",
    "not_walled": "分離：カーネルごとのプロセス以外はありません (カーネルは"
                  "あなたの権限で動きます: {why})。docs/instructors.md の "
                  "`Student code runs on your machine` を参照してください",
    "not_written": "{path} に書き込めませんでした: {why}",
    "wrong_python": "kit: この Python ({python}) には {module} がありません。"
                    "コースの Python で実行してください: .venv/bin/python "
                    "-m kit ... (`make setup` で作られます)",
}}

TABLES = {"REPORT": REPORT}


def say(key, **fields):
    """`key`'s text in the current language."""
    return i18n.text(REPORT, key, **fields)


def status(word):
    """A status as shown; an unknown one as it is."""
    return say(word) if word in REPORT["en"] else word


def chart_font():
    """Before the chart is made: a font for its labels (kit.labels)."""
    from kit.labels import fonts
    fonts()
