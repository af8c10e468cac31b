"""The ``featx`` group: printing what other people's files hold safely, one message and exit code per error,
Ctrl-C and termination signals as a clean stop. Every command module adds its commands to ``main``."""

from __future__ import annotations

import sys
import warnings

import click

from .._version import __version__
from ..errors import FeatxError, FeatxWarning, printable, signal_of
from ..options import command_line


def echo(text: object = "", err: bool = False) -> None:
    """``click.echo`` of ``printable(text)``."""
    click.echo(printable(text), err=err)


def note(text: str) -> None:
    """A line a run reports besides its result: on stdout, but a ``warning: ...`` one as ``featx: warning: ...``
    on stderr, as featx's warnings are shown."""
    if text.startswith("warning: "):
        echo(f"featx: {text}", err=True)
    else:
        echo(text)


def fail(error: FeatxError) -> None:
    """The error's message and hint on stderr, then exit with its code."""
    echo(f"featx: error: {error.message}", err=True)
    if error.hint:
        echo(f"  hint: {error.hint}", err=True)
    sys.exit(error.exit_code)


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning) -> None:
    """featx's own warnings as ``featx: warning: <message>`` on stderr; any other as Python shows it."""
    if issubclass(category, FeatxWarning):
        echo(f"featx: warning: {message}", err=True)
    else:
        _default(message, category, filename, lineno, file, line)


_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2


def fail_usage(error: click.UsageError) -> None:
    """A command line click cannot parse (a mistyped command or flag, a value outside an option's choices) as
    featx's own errors are shown: ``featx: error: <click's message>`` and a hint at the command's help; exit 2."""
    if isinstance(error, _NO_ARGS):  # a bare ``featx`` or ``featx study``: its help, as click shows it
        error.show()
        sys.exit(error.exit_code)
    path = error.ctx.command_path if error.ctx is not None else "featx"
    fail(FeatxError(error.format_message(), f"see '{path} --help'"))


class FeatxGroup(click.Group):
    """Turns featx's own errors, command lines it cannot parse and Ctrl-C into one clear message and an exit
    code, never a traceback, and its warnings into one line each."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as error:  # the group's own options (featx --bogus)
            fail_usage(error)

    def invoke(self, ctx):
        from ..signals import interrupts_on_termination

        try:
            # SIGTERM/SIGHUP: like Ctrl-C (143/129); messages name options as flags (command_line)
            with interrupts_on_termination(), warnings.catch_warnings(), command_line():
                warnings.simplefilter("always", FeatxWarning)
                warnings.showwarning = _show_warning
                return super().invoke(ctx)
        except FeatxError as error:
            fail(error)
        except click.UsageError as error:  # a command's (featx prob, featx probe --layr 3)
            fail_usage(error)
        except KeyboardInterrupt as interrupt:
            signum, name = signal_of(interrupt)
            echo(f"featx: interrupted ({name}); committed work is kept: run the same command again to resume", err=True)
            sys.exit(128 + signum)


# The end of ``featx --help``: one screen of the common commands, each a real command line (a test parses
# every ``featx ...`` line and checks its command and flags). ``\b`` keeps click from rewrapping the block.
CHEAT_SHEET = """\b
Common commands (COMMAND -h lists all its flags):
featx extract corpus.csv -o feats.h5               # all layers and poolings
featx extract corpus.csv --model ./bert --dry-run  # the cost; runs nothing
featx probe feats.h5 --label sentiment --layer all # probes per layer, pooling
featx plot feats.sentiment.probe.csv               # curves, heatmap: PNG+SVG
featx report feats.sentiment.probe.csv             # one-file HTML report
featx explain feats.sentiment.probe.csv            # errors by class, length
featx compare a.probe.csv b.probe.csv              # two models side by side
featx similarity feats.h5                          # CKA between layers
featx fit feats.h5 --label sentiment -o s.featx    # save the chosen probe
featx predict s.featx new.csv -o predictions.csv   # label new texts with it
featx erase feats.h5 --label tense --amnesic mood  # LEACE; amnesic probing
featx neurons feats.h5 --label tense --layer 3     # rank a layer's neurons
featx labels feats.h5                              # its label columns, counts
featx labels add feats.h5 more_labels.csv          # store more label columns
Python: featx.embed(texts, layer=3, pooling="mean")  # (rows, width) float32
FEATURES or RESULTS left out: the last ones written in this folder."""


@click.group(
    cls=FeatxGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=CHEAT_SHEET,
)
@click.version_option(__version__, prog_name="featx")
def main():
    """Extract every layer of an encoder once, then probe where your labels live."""


def run(argv: list[str] | None = None) -> None:
    """The ``featx`` console command (and ``python -m featx``): ``main``, then the process ends without the
    interpreter's teardown once nothing is left open (``featx.exiting``: about 0.5 s of CPU after torch)."""
    from ..exiting import exit_now

    try:
        main(argv, prog_name="featx")  # python -m featx too: its help and messages name the command as typed
    except SystemExit as stop:
        exit_now(stop.code)
    exit_now(0)


def use_agg() -> None:
    """Draw without a display: the commands only write figures."""
    import matplotlib

    matplotlib.use("Agg")
