"""What a resume says when it refuses a checkpoint, or a save when it
fails, in English and Japanese (kit.trainers.checkpoint says it): apart,
so the checks read in one sitting."""

# identity entries with words of their own (the rest: "other_setting")
IDENTITY_WORDS = ("model", "reference", "reward_funcs")

# Why a checkpoint cannot be resumed, and what to do, in kit.i18n's shape;
# tests/test_i18n.py insists on the Japanese half.
REFUSALS = {"en": {
    "cannot_resume": "cannot resume from {folder}: {why}",
    "no_folder": "there is no such folder: check the path (a checkpoint is "
                 "a checkpoint-N folder inside the run's output folder)",
    "a_file": "it is a file: give a checkpoint-N folder",
    "run_folder": "it is a run's folder, not one of its checkpoints: "
                  "resume from its latest, --resume-from-checkpoint "
                  "{latest}",
    "neither": "it has neither {state} nor kit_checkpoint.json, which are "
               "written last: saving it was cut short (or it is not a "
               "checkpoint): resume from an earlier checkpoint, or start a "
               "new run",
    "cut_short": "it has {name} but no kit_checkpoint.json, which is "
                 "written after it: saving it was cut short: resume from "
                 "an earlier checkpoint, or start a new run",
    "cut_short_kit": "it has {name} from a kit trainer but no "
                     "kit_checkpoint.json, which is written after it: "
                     "saving it was cut short: resume from an earlier "
                     "checkpoint, or start a new run",
    "not_the_kits": "it has no kit_checkpoint.json, so it was not saved by "
                    "a kit trainer: start a new run, or resume from a "
                    "checkpoint {trainer} saved",
    "damaged": "{name} is damaged ({why}), probably cut short while "
               "saving: resume from an earlier checkpoint, or start a new "
               "run",
    "not_json": "not JSON: {error}",
    "lacks": "it lacks 'trainer' or 'settings'",
    "other_trainer": "it was saved by {theirs}, and this is {mine}: resume "
                     "from a {mine} checkpoint or start a new run",
    "older_kit": "it was saved by an older kit, which did not record "
                 "{name}: start a new run",
    "other_setting": "it was saved with {name}={theirs}, this run has "
                     "{name}={value}: resume with the same {name} or start "
                     "a new run",
    "model": "its run started from another model (weights {theirs}, this "
             "run's {value}), of the same shape: resume with the model the "
             "run started from, or start a new run",
    "reference": "its run's reference model was another (weights {theirs}, "
                 "this run's {value}): resume with the reference it was "
                 "trained against, or start a new run",
    "reward_funcs": "its buffer was scored by the reward functions {theirs}, "
                    "this run has {value}: resume with the same "
                    "reward_funcs, or start a new run",
    "other_step": "its {state} says global_step={step}, but the checkpoint "
                  "was saved at step {saved}: a file edited or taken from "
                  "another checkpoint: resume from a checkpoint as the kit "
                  "saved it, or start a new run",
    "past_max_steps": "it is at step {step}, past this run's max_steps="
                      "{max_steps} (the Trainer would still take one more "
                      "step): give max_steps above {step}, the steps in all, "
                      "or resume from an earlier checkpoint",
    "save_failed": "could not save the checkpoint {folder} ({why}): it is "
                   "not whole, and no resume will take it: free some space "
                   "(a full disk?), then resume from the latest whole one "
                   "({latest}), or start again",
    "removed_earlier": "{folder}: removed {names}, saved there by an "
                       "earlier run: this run starts anew (a run goes on "
                       "from a checkpoint only when resumed from it)",
    "foreign_checkpoints": "output_dir {folder} holds {names}, which no kit "
                           "trainer saved: this run's checkpoints would mix "
                           "with them: give a new output_dir, or move them "
                           "away",
    "not_finite": "its {name} holds values that are not finite (nan or inf) "
                  "in {tensor}: the run had diverged before this save (or the "
                  "file is damaged): resume from an earlier checkpoint, or "
                  "start a new run with a lower learning_rate",
    "missing": "{name} is missing, so the run would not continue as it "
               "was: copy the whole checkpoint folder, or start a new run",
    "other_model": "its model has {setting}={theirs}, this run's model has "
                   "{setting}={mine}: resume with the model (and --preset) "
                   "the checkpoint was trained from, or start a new run",
    "other_shape": "its model.safetensors holds {setting} of shape {shape}, "
                   "this run's model {mine}: resume with the model (and "
                   "--preset) the checkpoint was trained from, or start a "
                   "new run",
    "not_only_tensors": "{name} holds more than tensors and numbers, and "
                        "loading it could run code, so it was not loaded: "
                        "resume only from checkpoints the kit saved",
    "other_state": "{name} holds {found}, not {expected}: it was not saved "
                   "by {trainer}: resume from a checkpoint it saved, or "
                   "start a new run",
    "unfit_state": "{name} {problem}: it was not saved with this checkpoint "
                   "by a run with these settings: resume from a checkpoint "
                   "the kit saved, or start a new run",
    "unfit_own_state": "{name} {problem}, as {owner} left it: the kit "
                       "saves the buffer as it stands and resumes by "
                       "serving self._buffer[self._step % k], so {owner} "
                       "must keep all k slices until the next generation "
                       "(serve a slice, do not remove it) and count "
                       "self._step once a call: fix {owner}, then start a "
                       "new run",
}, "ja": {
    "cannot_resume": "{folder} から再開できません: {why}",
    "no_folder": "そのフォルダーはありません。パスを確かめてください"
                 "（チェックポイントは、実行の出力フォルダーの中の "
                 "checkpoint-N フォルダーです）",
    "a_file": "ファイルです。checkpoint-N フォルダーを指定してください",
    "run_folder": "実行のフォルダーで、そのチェックポイントではありません。"
                  "最新のものから再開してください: "
                  "--resume-from-checkpoint {latest}",
    "neither": "{state} も kit_checkpoint.json もありません（どちらも最後に"
               "書かれます）。保存が途中で止まったか、チェックポイントでは"
               "ありません。前のチェックポイントから再開するか、新しく学習を"
               "始めてください",
    "cut_short": "{name} はありますが、その後に書かれる "
                 "kit_checkpoint.json がありません。保存が途中で止まり"
                 "ました。前のチェックポイントから再開するか、新しく学習を"
                 "始めてください",
    "cut_short_kit": "kit の trainer の {name} はありますが、その後に"
                     "書かれる kit_checkpoint.json がありません。保存が途中"
                     "で止まりました。前のチェックポイントから再開するか、"
                     "新しく学習を始めてください",
    "not_the_kits": "kit_checkpoint.json がないので、kit の trainer が保存"
                    "したものではありません。新しく学習を始めるか、"
                    "{trainer} が保存したチェックポイントから再開してください",
    "damaged": "{name} が壊れています（{why}）。保存の途中で止まったの"
               "でしょう。前のチェックポイントから再開するか、新しく学習を"
               "始めてください",
    "not_json": "JSON ではありません: {error}",
    "lacks": "'trainer' か 'settings' がありません",
    "other_trainer": "{theirs} が保存したもので、これは {mine} です。"
                     "{mine} のチェックポイントから再開するか、新しく学習を"
                     "始めてください",
    "older_kit": "古い kit が保存したもので、{name} が記録されていません。"
                 "新しく学習を始めてください",
    "other_setting": "{name}={theirs} で保存されましたが、この実行は "
                     "{name}={value} です。同じ {name} で再開するか、新しく"
                     "学習を始めてください",
    "model": "別のモデル（重み {theirs}、この実行は {value}）から始めた実行"
             "のもので、形状は同じです。実行を始めたモデルで再開するか、"
             "新しく学習を始めてください",
    "reference": "その実行の参照モデルは別のもの（重み {theirs}、この実行は "
                 "{value}）です。学習に使った参照モデルで再開するか、新しく"
                 "学習を始めてください",
    "reward_funcs": "バッファーは報酬関数 {theirs} で採点されましたが、この"
                    "実行は {value} です。同じ reward_funcs で再開するか、"
                    "新しく学習を始めてください",
    "other_step": "{state} は global_step={step} ですが、チェックポイントは"
                  "ステップ {saved} で保存されました。ファイルが編集されたか、"
                  "別のチェックポイントのものです。kit が保存したままの"
                  "チェックポイントから再開するか、新しく学習を始めてください",
    "past_max_steps": "ステップ {step} にあり、この実行の max_steps="
                      "{max_steps} を過ぎています（Trainer はそれでも 1 "
                      "ステップ進みます）。max_steps を {step} より大きく"
                      "（全体のステップ数）するか、前のチェックポイントから"
                      "再開してください",
    "save_failed": "チェックポイント {folder} を保存できませんでした（{why}）。"
                   "完全ではないので、再開には使われません。空き容量を作って"
                   "から（ディスクがいっぱい？）、最新の完全なもの（{latest}）"
                   "から再開するか、最初からやり直してください",
    "removed_earlier": "{folder}: 以前の実行が保存した {names} を削除しました。"
                       "この実行は最初から始まります（チェックポイントの続き"
                       "から学習するのは、そこから再開したときだけです）",
    "foreign_checkpoints": "output_dir {folder} には、kit の trainer が保存"
                           "していない {names} があります。この実行の"
                           "チェックポイントと混ざります。別の output_dir を"
                           "指定するか、それらを移動してください",
    "not_finite": "{name} の {tensor} に有限でない値（nan か inf）があります。"
                  "この保存の前に学習が発散していました（またはファイルが"
                  "壊れています）。前のチェックポイントから再開するか、"
                  "learning_rate を下げて新しく学習を始めてください",
    "missing": "{name} がないので、実行は元どおりには続きません。"
               "チェックポイントのフォルダー全体をコピーするか、新しく学習を"
               "始めてください",
    "other_model": "チェックポイントのモデルは {setting}={theirs}、この実行"
                   "のモデルは {setting}={mine} です。チェックポイントを学習した"
                   "モデル（と --preset）で再開するか、新しく学習を始めて"
                   "ください",
    "other_shape": "model.safetensors の {setting} の形状は {shape}、この実行の"
                   "モデルでは {mine} です。チェックポイントを学習したモデル"
                   "（と --preset）で再開するか、新しく学習を始めてください",
    "not_only_tensors": "{name} にはテンソルと数以外のものが入っていて、"
                        "読み込むとコードが実行されうるため、読み込み"
                        "ませんでした。kit が保存したチェックポイントからだけ"
                        "再開してください",
    "other_state": "{name} の中身は {found} で、{expected} ではありません。"
                   "{trainer} が保存したものではありません。それが保存した"
                   "チェックポイントから再開するか、新しく学習を始めて"
                   "ください",
    "unfit_state": "{name} {problem}: このチェックポイントとともに、この"
                   "設定の実行で保存されたものではありません。kit が保存した"
                   "チェックポイントから再開するか、新しく学習を始めて"
                   "ください",
    "unfit_own_state": "{name} {problem}: {owner} がこの状態にしました。kit "
                       "はバッファーをそのまま保存し、再開では "
                       "self._buffer[self._step % k] を供給します。そのため "
                       "{owner} は次の生成まで k 個のスライスをすべて残し"
                       "（スライスを供給しても取り除かない）、self._step を"
                       "呼び出しごとに 1 回数える必要があります。{owner} を"
                       "直してから、新しく学習を始めてください",
}}
