"""The drift guard: the private Trainer methods the kit overrides still
have the signatures they were written against."""

import importlib
import inspect
import pkgutil

from transformers import Trainer

import kit.checks
import kit.trainers
from kit import doctor, private_methods


def kit_trainer_classes():
    """Every Trainer subclass defined in kit.trainers and kit.checks (the
    reference and wrong answers the checkers run are trainers too)."""
    classes = []
    for package in (kit.trainers, kit.checks):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}."
                                             f"{info.name}")
            classes += [value for value in vars(module).values()
                        if inspect.isclass(value)
                        and issubclass(value, Trainer)
                        and value.__module__ == module.__name__]
    return classes


def test_the_installed_transformers_matches_the_record():
    assert private_methods.check() == []


def test_the_record_lists_exactly_the_private_methods_the_kit_overrides():
    found = private_methods.overrides(kit_trainer_classes())
    recorded = {name: set(files)
                for name, (_, files) in private_methods.RECORD.items()}
    assert found == recorded, (
        "kit/private_methods.py RECORD must list each private Trainer "
        "method the kit overrides, with the files that override it")


def test_an_altered_signature_is_named_with_both_and_the_file(monkeypatch):
    monkeypatch.setitem(private_methods.RECORD, "_save_checkpoint", (
        "(self, model, trial, metrics=None)", ("kit/trainers/checkpoint.py",)))
    [finding] = private_methods.check()
    assert finding.name == "_save_checkpoint"
    assert "(self, model, trial, metrics=None)" in finding.message
    assert "installed (self, model, trial)" in finding.message
    assert "kit/trainers/checkpoint.py" in finding.message


def test_a_removed_method_is_named_as_gone(monkeypatch):
    monkeypatch.delattr(Trainer, "_get_grad_norm")
    [finding] = private_methods.check()
    assert finding.name == "_get_grad_norm" and finding.installed is None
    assert "is gone" in finding.message
    assert "kit/trainers/nonfinite.py" in finding.message


def test_annotations_do_not_count():
    def annotated(self, model: int, trial: "str | None" = None) -> None:
        pass
    assert private_methods.plain_signature(annotated) == (
        "(self, model, trial=None)")


def test_doctor_prints_one_line_per_method(capsys):
    assert doctor.private_methods_report() == []
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(private_methods.RECORD) + len(
        private_methods.CALLED)
    assert all(line.startswith("private") and "as in 5.25.0" in line
               for line in lines)


def test_doctor_fails_naming_a_changed_method(monkeypatch, capsys):
    monkeypatch.setitem(private_methods.RECORD, "_prepare_inputs", (
        "(self, generation_batch)", ("kit/trainers/grpo.py",)))
    [problem] = doctor.private_methods_report()
    out = capsys.readouterr().out
    assert "Trainer._prepare_inputs(self, generation_batch) CHANGED" in out
    assert "_prepare_inputs changed" in problem
    assert "kit/trainers/grpo.py" in problem


def test_each_override_takes_every_argument_trainer_passes():
    """The kit must not make the mistake notebook 08 teaches: an override
    takes as many arguments as Trainer's method (a name may differ: TRL's
    `generation_batch` for `inputs`), and the checkpoint ones take
    **kwargs too, so an argument a newer transformers adds or passes by
    keyword does not break them."""
    import inspect
    from transformers import Trainer

    def positional(parameters):
        return [p for p in parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    from kit.checks import EXERCISES
    # a catalogued mistake is wrong on purpose (08's NoKwargs)
    wrong = {m.code for e in EXERCISES.values() for m in e.mistakes}
    for cls in kit_trainer_classes():
        for owner in cls.__mro__:
            if not owner.__module__.startswith("kit.") or owner in wrong:
                continue
            for name in private_methods.overrides([owner]):
                if name not in vars(owner):
                    continue
                ours = inspect.signature(vars(owner)[name]).parameters
                theirs = inspect.signature(getattr(Trainer, name)).parameters
                where = f"{owner.__name__}.{name}{inspect.signature(vars(owner)[name])}"
                assert len(positional(ours)) >= len(positional(theirs)), where
                if name in ("_save_checkpoint", "_load_from_checkpoint"):
                    assert any(p.kind is p.VAR_KEYWORD
                               for p in ours.values()), f"{where}: **kwargs"


# ------------------------------------------------ drift a signature hides

def test_doctor_fails_on_a_called_method_made_keyword_only(monkeypatch,
                                                           capsys):
    # N46: the kit calls it, does not override it; before, "ready"
    from transformers import Trainer
    original = Trainer._get_output_dir

    def keyword_only(self, *, trial):
        return original(self, trial)
    monkeypatch.setattr(Trainer, "_get_output_dir", keyword_only)
    assert doctor.main() == 1
    captured = capsys.readouterr()
    assert ("Trainer._get_output_dir(self, trial) CHANGED to "
            "(self, *, trial)") in captured.out
    assert ("a two-step GRPO run through the kit's trainers failed "
            "(TypeError: ") in captured.err
    assert captured.out.endswith("not ready\n")


def test_doctor_fails_when_trainer_bypasses_an_override(monkeypatch, capsys):
    # N47: the loop calls Trainer._get_grad_norm(self, ...), same signature;
    # before, "ready", and DPO at beta=1e30 trained on with grad_norm inf
    import inspect
    import textwrap

    import transformers.trainer
    from transformers import Trainer
    source = textwrap.dedent(inspect.getsource(Trainer._run_epoch))
    assert "self._get_grad_norm(" in source
    namespace = dict(vars(transformers.trainer))
    exec(source.replace("self._get_grad_norm(",
                        "Trainer._get_grad_norm(self, "), namespace)
    monkeypatch.setattr(Trainer, "_run_epoch", namespace["_run_epoch"])
    assert doctor.probe_report() == [
        "the installed Trainer never calls self._get_grad_norm: the kit's "
        "override in kit/trainers/nonfinite.py is skipped"]
    assert "PROBLEM, see below" in capsys.readouterr().out


def test_the_probe_reaches_every_override_of_this_transformers():
    assert private_methods.probe() == []
