"""What notebook 08's checker (nb08_private) says, English beside
Japanese: one table, so a reviewer reads all its words in one place."""

# What buffer_checkpoint's checker says, English beside Japanese: its hint
# ladder (gentlest first), its stub line, each mistake's (title, why, hint),
# its judge's lines.
BUFFER_CHECKPOINT_WORDS = {
    "hints": {
        "en": ["Take what you do not use: def _save_checkpoint(self, model, "
               "trial, **kwargs), and pass **kwargs on to super(). The same "
               "for _load_from_checkpoint(self, resume_from_checkpoint, "
               "model=None, **kwargs).",
               "Saving: call super()._save_checkpoint(...) first (it makes "
               "the checkpoint-N folder), then torch.save("
               "{'step': self._step, 'buffer': self._buffer, 'generation': "
               "self._generation}, path) in that folder, in a file named for "
               "self.accelerator.process_index: every process holds its own "
               "slices.",
               "Loading: first your file: raise a ValueError naming it if "
               "it is missing, torch.load(path, weights_only=True), and "
               "raise one if its buffer has not "
               "self.args.steps_per_generation slices. Then "
               "super()._load_from_checkpoint(...) (it loads the weights), "
               "then set self._step, self._buffer and self._generation "
               "back, all three."],
        "ja": ["使わないものも受け取ります: def _save_checkpoint(self, "
               "model, trial, **kwargs) とし、**kwargs を super() に渡します"
               "。_load_from_checkpoint(self, resume_from_checkpoint, "
               "model=None, **kwargs) も同じです。",
               "保存：まず super()._save_checkpoint(...) を呼び "
               "(checkpoint-N フォルダを作ります)、それからそのフォルダに "
               "torch.save("
               "{'step': self._step, 'buffer': self._buffer, 'generation': "
               "self._generation}, path) します。ファイル名は "
               "self.accelerator.process_index にちなんで付けます。各プロセス"
               "が自分のスライスを持っています。",
               "読み込み：まず自分のファイルです。ファイルがなければ、その"
               "名前を挙げて ValueError を送出し、torch.load(path, "
               "weights_only=True) で読み、バッファのスライスの数が "
               "self.args.steps_per_generation でなければ、やはり送出します"
               "。それから super()._load_from_checkpoint(...) を呼び (重み"
               "を読み込みま"
               "す)、self._step、self._buffer、self._generation の 3 つすべ"
               "てを元に戻します。"]},
    "stub": {
        "en": "replace each `raise NotImplementedError` with your code (and "
              "give each method the signature it needs)",
        "ja": "各 `raise NotImplementedError` をあなたのコードに置き換えてく"
              "ださい (各メソッドには必要なシグネチャを付けてください)"},
    "no_kwargs": {
        "en": ("no **kwargs",
               "a Trainer that passes one argument more (as 4.46 passed "
               "metrics, which 4.47 dropped) stops your run with a TypeError "
               "at its first save",
               "def _save_checkpoint(self, model, trial, **kwargs), and "
               "super()._save_checkpoint(model, trial, **kwargs)"),
        "ja": ("**kwargs がない",
               "引数を 1 つ多く渡す Trainer (4.46 は metrics を渡し、4.47 で"
               "なくなりました) では、最初の保存で TypeError になり実行が止ま"
               "ります",
               "def _save_checkpoint(self, model, trial, **kwargs) とし"
               "、super()._save_checkpoint(model, trial, **kwargs)")},
    "saved_before_super": {
        "en": ("saved before super()",
               "the checkpoint-N folder does not exist until the Trainer's "
               "_save_checkpoint makes it, so torch.save has nowhere to write",
               "call super()._save_checkpoint(model, trial, **kwargs) "
               "first, then save the buffer into the folder it made"),
        "ja": ("super() の前に保存した",
               "checkpoint-N フォルダは Trainer の _save_checkpoint が作るま"
               "で存在しないので、torch.save は書く場所がありません",
               "まず super()._save_checkpoint(model, trial, **kwargs) を呼"
               "び、それが作ったフォルダにバッファを保存してください")},
    "buffer_not_saved": {
        "en": ("buffer not saved",
               "the checkpoint holds only the Trainer's files: a resume "
               "mid-buffer generates anew, with other completions, and the "
               "run ends elsewhere",
               "after super(): torch.save("
               "{'step': ..., 'buffer': ..., 'generation': ...}, "
               "os.path.join(folder, name))"),
        "ja": ("バッファが保存されていない",
               "チェックポイントには Trainer のファイルしかありません。バッフ"
               "ァの途中から再開すると新たに生成し、別の補完になって、実行は"
               "別のところで終わります",
               "super() のあと: torch.save("
               "{'step': ..., 'buffer': ..., 'generation': ...}, "
               "os.path.join(folder, name))")},
    "super_not_called": {
        "en": ("super() not called",
               "without the Trainer's _load_from_checkpoint the weights are "
               "never loaded: the resumed run trains the starting policy "
               "again",
               "first super()._load_from_checkpoint(resume_from_checkpoint, "
               "model, **kwargs), then your own file"),
        "ja": ("super() を呼んでいない",
               "Trainer の _load_from_checkpoint がないと重みは読み込まれませ"
               "ん。再開した実行は最初の方策をもう一度学習します",
               "まず super()._load_from_checkpoint(resume_from_checkpoint, "
               "model, **kwargs)、それから自分のファイル")},
    "not_restored": {
        "en": ("saved but not restored",
               "the file is in the checkpoint but nothing reads it: the "
               "resumed run starts with no buffer and generates anew",
               "override _load_from_checkpoint too: torch.load the file and "
               "set self._buffer (and the rest) back"),
        "ja": ("保存したが復元していない",
               "ファイルはチェックポイントにありますが、誰も読みません。再開"
               "した実行はバッファなしで始まり、新たに生成します",
               "_load_from_checkpoint もオーバーライドしてください。ファイ"
               "ルを torch.load し、self._buffer (と残り) を元に戻します")},
    "step_not_restored": {
        "en": ("step counter not restored",
               "the buffer is back but self._step is 0, so the next step "
               "generates anew instead of serving the buffer's next slice",
               "self._step = state['step'], beside self._buffer"),
        "ja": ("ステップカウンタが復元されていない",
               "バッファは戻りましたが self._step が 0 なので、次のステップは"
               "バッファの次のスライスを使わずに新たに生成します",
               "self._buffer の隣で self._step = state['step']")},
    "read_after_the_weights": {
        "en": ("file read after the weights",
               "a checkpoint without your file fails only once the Trainer "
               "has loaded its weights (a raw FileNotFoundError), and one "
               "whose buffer was cut for another k resumes and serves the "
               "wrong slices",
               "read and check your file (there; steps_per_generation "
               "slices) before super()._load_from_checkpoint(...), raising "
               "a ValueError that names it"),
        "ja": ("重みの後にファイルを読んでいる",
               "ファイルのないチェックポイントは、Trainer が重みを読み込んだ"
               "後になって失敗し (そのままの FileNotFoundError)、別の k で切"
               "ったバッファのチェックポイントは再開されて、違うスライスを渡"
               "します",
               "super()._load_from_checkpoint(...) の前に自分のファイルを読"
               "んで確かめ (あること、スライスが steps_per_generation 個あ"
               "ること)、その名前を挙げて ValueError を送出します")},
    "same_file_everywhere": {
        "en": ("every process writes the same file",
               "each process holds its own slices, and with one file name "
               "the last to save wins: on 2 processes one buffer is lost",
               "name the file for the process: "
               "f'buffer_{self.accelerator.process_index}.pt'"),
        "ja": ("全プロセスが同じファイルに書く",
               "各プロセスは自分のスライスを持ち、ファイル名が 1 つだと最後に"
               "保存したものが勝ちます: 2 プロセスでは 1 つのバッファが失われ"
               "ます",
               "ファイル名をプロセスにちなんで付けます: "
               "f'buffer_{self.accelerator.process_index}.pt'")},
    "unpickles_anything": {
        "en": ("weights_only=False: unsafe",
               "torch.load(..., weights_only=False) unpickles whatever the "
               "file holds, and a checkpoint from elsewhere (a shared "
               "folder, a download) can hold code that runs as it loads",
               "torch.load(path, weights_only=True), the default: it loads "
               "tensors, numbers, lists and dicts, and refuses anything "
               "else"),
        "ja": ("weights_only=False は安全でない",
               "torch.load(..., weights_only=False) はファイルの中身を何でも"
               "アンピックルします。よそから来たチェックポイント (共有フォル"
               "ダ、ダウンロード) には、読み込むと実行されるコードが入ってい"
               "ることがあります",
               "torch.load(path, weights_only=True) (既定) を使います。テン"
               "ソル、数、リスト、dict だけを読み込み、ほかは拒否します")},
    "problem.ran code": {
        "en": "resuming from a checkpoint whose buffer file also held an "
              "object that runs code when unpickled ran that code: "
              "torch.load(..., weights_only=False) unpickles anything; "
              "load with weights_only=True (the default), which refuses it",
        "ja": "アンピックルするとコードを実行するオブジェクトがバッファのファ"
              "イルに入ったチェックポイントから再開すると、そのコードが実行さ"
              "れました。torch.load(..., weights_only=False) は何でもアンピッ"
              "クルします。それを拒否する weights_only=True (既定) で読み込"
              "んでください"},
    "problem.kwargs": {
        "en": "saving raised a TypeError when the Trainer passed one keyword "
              "more ({name}=None): take **kwargs and pass them on to super()",
        "ja": "Trainer がキーワード引数を 1 つ多く渡すと ({name}=None) 保存"
              "で TypeError が送出されました: **kwargs を受け取り、super() "
              "に渡してください"},
    "property:saving_fails": {
        "en": ("saving fails",
               "your _save_checkpoint raised while the Trainer saved"),
        "ja": ("保存の失敗",
               "Trainer の保存中に、あなたの _save_checkpoint が例外を送出し"
               "ました")},
    "property:resuming_fails": {
        "en": ("resuming your own checkpoint fails",
               "the run's own checkpoint, as your _save_checkpoint wrote it, "
               "could not be resumed"),
        "ja": ("自分のチェックポイントから再開できない",
               "あなたの _save_checkpoint が書いたままのチェックポイントから"
               "再開できませんでした")},
    "property:resumed_differs": {
        "en": ("the resumed run goes another way",
               "part of the state is not set back after loading"),
        "ja": ("再開した実行が別の道をたどる",
               "読み込んだ後に、状態の一部が元に戻っていません")},
    "problem.saving": {
        "en": "saving a checkpoint raised {error}: call super() first, then "
              "save into the checkpoint-N folder it made",
        "ja": "チェックポイントの保存で {error} が送出されました。まず "
              "super() を呼び、それが作った checkpoint-N フォルダに保存して"
              "ください"},
    "problem.saving after super": {
        "en": "saving the checkpoint raised {error} after super() had saved "
              "the Trainer's files: save into the folder super() made, "
              "os.path.join(self._get_output_dir(trial), "
              "f'checkpoint-{{self.state.global_step}}')",
        "ja": "super() が Trainer のファイルを保存した後、チェックポイントの"
              "保存で {error} が送出されました: super() が作ったフォルダ "
              "os.path.join(self._get_output_dir(trial), "
              "f'checkpoint-{{self.state.global_step}}') に保存してください"},
    "problem.before super": {
        "en": "your _save_checkpoint wrote {files} into the checkpoint "
              "folder before super()._save_checkpoint began: call super() "
              "first, then save into the checkpoint-N folder it made",
        "ja": "_save_checkpoint が super()._save_checkpoint より前に "
              "{files} を チェックポイントのフォルダに書き込みました。まず "
              "super() を呼び、それが作った checkpoint-N フォルダに保存して"
              "ください"},
    "problem.not saved": {
        "en": "your _save_checkpoint added no file to the checkpoint: save "
              "the buffer and the step counter there",
        "ja": "あなたの _save_checkpoint はチェックポイントにファイルを追加"
              "しませんでした。バッファとステップカウンタをそこに保存してく"
              "ださい"},
    "problem.resuming": {
        "en": "resuming from the checkpoint raised {error}",
        "ja": "チェックポイントからの再開で {error} が送出されました"},
    "problem.weights": {
        "en": "after loading, the weights are not those saved: call "
              "super()._load_from_checkpoint(...)",
        "ja": "読み込み後の重みが保存したものではありません: "
              "super()._load_from_checkpoint(...) を呼んでください"},
    "problem.buffer": {
        "en": "after loading, self._buffer is not the one saved: read your "
              "file back in _load_from_checkpoint",
        "ja": "読み込み後の self._buffer が保存したものではありません: "
              "_load_from_checkpoint で自分のファイルを読み戻してください"},
    "problem.step": {
        "en": "after loading, self._step is {step}, it was {saved} when "
              "saved: set it back too",
        "ja": "読み込み後の self._step は {step} ですが、保存時は {saved} で"
              "した。これも元に戻してください"},
    "problem.not exact": {
        "en": "the resumed run does not end where the uninterrupted one does "
              "(losses, generate() calls or weights differ): restore "
              "self._step, self._buffer and self._generation",
        "ja": "再開した実行が中断しなかった実行と同じところで終わりません ("
              "損失、generate() の呼び出し、または重みが違います): "
              "self._step、self._buffer、self._generation を元に戻してくださ"
              "い"},
    "problem.overwritten": {
        "en": "saving as process 0 wrote over the file process 1 had saved: "
              "name the file for the process (self.accelerator.process_index)",
        "ja": "プロセス 0 としての保存が、プロセス 1 が保存したファイルを上"
              "書きしました。ファイル名をプロセスにちなんで付けてください "
              "(self.accelerator.process_index)"},
    "problem.nothing": {
        "en": "as process 1 of 2 your _save_checkpoint saved nothing of its "
              "own: every process holds its own slices, so each saves its "
              "file",
        "ja": "2 つ中のプロセス 1 として、あなたの _save_checkpoint は自分の"
              "ものを何も保存しませんでした。各プロセスが自分のスライスを持"
              "つので、それぞれが自分のファイルを保存します"},
    "case.missing": {
        "en": "without your buffer file",
        "ja": "バッファのファイルがない"},
    "case.other k": {
        "en": "whose buffer has a slice more than this run's "
              "steps_per_generation",
        "ja": "バッファのスライスがこの実行の steps_per_generation より 1 つ"
              "多い"},
    "problem.resumed": {
        "en": "a checkpoint {case} was resumed without a word: in "
              "_load_from_checkpoint check your file first (there, and its "
              "buffer has steps_per_generation slices) and raise a "
              "ValueError naming it",
        "ja": "{case}チェックポイントが、何も言わずに再開されました: "
              "_load_from_checkpoint でまず自分のファイルを確かめ (あること"
              "、バッファのスライスが steps_per_generation 個あること)、その"
              "名前を挙げて ValueError を送出してください"},
    "problem.after the weights": {
        "en": "a checkpoint {case} was refused ({error}) only after super() "
              "had loaded its weights: read and check your file first, then "
              "call super()._load_from_checkpoint(...)",
        "ja": "{case}チェックポイントは、super() が重みを読み込んだ後になっ"
              "て拒否されました ({error}): まず自分のファイルを読んで確かめ"
              "、それから super()._load_from_checkpoint(...) を呼んでくださ"
              "い"},
    "judge.passed": {
        "en": "resumed mid-buffer, it ends bit-exactly where the "
              "uninterrupted run does; a newer Trainer's extra keyword "
              "passes; each process saves its own file; a checkpoint without "
              "it, or cut for another k, is refused before the weights "
              "load, and one holding code is not unpickled",
        "ja": "バッファの途中から再開して、中断しなかった実行とビット単位で"
              "同じところで終わります。新しい Trainer の余分なキーワード引数"
              "も通り、各プロセスが自分のファイルを保存します。ファイルのな"
              "いチェックポイントや、別の k で切ったチェックポイントは、重み"
              "を読み込む前に拒否され、コードを含むファイルはアンピックルさ"
              "れません"},
}
