"""Commands that bring runs in from outside the simulator: ingest (CSV/Parquet + a mapping),
ingest-log (GPGPU-Sim logs), measure (NVML).
"""

from __future__ import annotations

import sys

import click

from gpudb.cli.common import Context, Finite, gpu_name, number_list, echo, friendly_errors, writes
from gpudb.cli.main import cli
from gpudb.present.output import printable


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--mapping", "mapping_path", required=True, type=click.Path(dir_okay=False),
              help="TOML mapping of the files' columns (see fixtures/mappings/).")
@click.option("--experiment", help="Experiment the runs join (default: the mapping's, "
                                   "else the first file's name).")
@click.option("--suite", help="Kernel suite: kernel_id = '<suite>/<kernel>' (default: the "
                              "mapping's [run] suite).")
@click.option("--replace", is_flag=True,
              help="Files ingested before (same content): delete the runs of that ingest, "
                   "with every row derived from them, and store the new mapping's instead, "
                   "in the one transaction (a failure keeps the earlier runs).")
@click.pass_obj
@friendly_errors
@writes
def ingest(obj: Context, files, mapping_path, experiment, suite, replace):
    """Load measured CSV/Parquet files as whole-run runs and metrics (all files or nothing).

    Every file is validated first; a bad cell stops the whole call with its file, line (a
    Parquet file's row) and column and the count of every row with the same problem, and
    nothing is written. Files already ingested are skipped (--replace: their
    earlier runs replaced). Each file's report says which of its columns became metrics,
    were dropped as text (or empty) or ignored; a summary per GPU follows (clocks, time,
    power and energy ranges) with a flag for values a GPU cannot have, such as a time unit
    1000x off.

    Example:

    \b
        gpudb ingest v100-dvfs-real-profile.csv \\
            --mapping fixtures/mappings/v100-profile.toml
        gpudb ingest v100-dvfs-real-profile.csv --replace \\
            --mapping fixed-v100-profile.toml
    """
    from gpudb.sources.tabular.mapping import load_mapping

    mapping = load_mapping(mapping_path)   # a bad mapping before the file is opened
    with obj.database() as database:
        with click.progressbar(length=len(files), label="validating", file=sys.stderr,
                               hidden=len(files) < 2) as bar:
            reports = database.ingest(files, mapping, experiment, suite=suite,
                                      replace=replace, progress=lambda _name: bar.update(1))
    _echo_reports(reports, lambda r: (
        f"{r.rows} rows, {r.runs_added} runs added"
        + (f" (replacing {r.runs_replaced} of its earlier ingest)" if replace else "")
        + f", {r.runs_present} already present, {r.metrics_added} metric values"
        + (f"; model inputs: {r.inputs_summary()}" if r.inputs else "")
        + (f"\n  {r.rows_summary()}" if r.rows_summary() else "")
        + (f"\n  columns: {r.columns_summary()}" if r.columns_summary() else "")))
    _echo_summaries(reports.summaries)


def _echo_summaries(summaries) -> None:
    """One line per GPU, its flags indented under it with a '!'."""
    for s in summaries:
        echo(printable(f"summary {s.line()}"))
        for flag in s.flags:
            echo(printable(f"  ! {flag}"))


def _echo_reports(reports, describe) -> None:
    """One line per ingested file (``describe(report)``), or why it was skipped."""
    for r in reports:
        if r.skipped_reason:
            echo(f"{r.file}: {r.skipped_reason}; nothing added")
        else:
            echo(f"{r.file}: {describe(r)}")


@cli.command("ingest-log")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="FILE_OR_DIR...")
@click.option("--power-report", type=click.Path(dir_okay=False),
              help="GPUWattch/AccelWattch power report of the one log given (default: the "
                   "gpgpusim_power_report__*.log beside each log).")
@click.option("--experiment", help="Experiment the runs join (default: the directory's name "
              "when one directory is given, else the first log's name).")
@click.option("--gpu", "gpu_id", callback=gpu_name,
              help="gpu_id of the simulated GPU (default: gpgpusim-<SMs>sm).")
@click.option("--suite", default="gpgpusim", show_default=True,
              help="Kernel suite: kernel_id = '<suite>/<program>:<kernel>:<launch uid>'.")
@click.pass_obj
@friendly_errors
@writes
def ingest_log(obj: Context, paths, power_report, experiment, gpu_id, suite):
    """Load GPGPU-Sim 3.x / Accel-Sim logs: each kernel launch becomes a run (all or nothing).

    A directory is searched for logs. Cycles are core-clock cycles (the first field of
    -gpgpu_clock_domains, which becomes core_mhz; the DRAM field becomes mem_mhz); energy is
    GPUWattch's average power x time. A bad or truncated log, or a missing power report,
    stops the call with one line, and nothing is written. Logs already ingested are skipped.

    Example:

        gpudb ingest-log rooflinedvfs-logs/ --experiment rooflinedvfs
    """
    from gpudb.sources.gpgpusim.ingest import read_logs

    # the logs first: one refused, or a command killed while reading, leaves no new file
    read = read_logs(list(paths), power_report)
    with obj.database() as database:
        reports = database.ingest_log(paths, power_report, experiment, gpu_id, suite, read=read)
    _echo_reports(reports, lambda r: (
        f"{r.launches} launch{'es' if r.launches != 1 else ''}, {r.runs_added} runs added, "
        f"{r.runs_present} already present, {r.metrics_added} metric values, "
        f"{r.intervals_added} intervals"
        + (f"; {r.counters_unwrapped} counter values read past a 32-bit wrap"
           if r.counters_unwrapped else "")
        + (f"; {r.counters_left_out} counter values left out (the counter went down: reset "
           "by the simulator)" if r.counters_left_out else "")
        + ("" if r.power_report else "; no power report: energy not known")))
    _echo_summaries(reports.summaries)
    if reports.note:
        echo(printable(reports.note))  # program names from the logs


@cli.command(context_settings={"allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED,
                metavar="-- COMMAND [ARGS]...")
@click.option("--core-mhz", "core_mhz", required=True, multiple=True, callback=number_list(int),
              metavar="LIST",
              help="Core (graphics) clocks to measure at, MHz: 1380,1530 (or repeat it).")
@click.option("--mem-mhz", "mem_mhz", required=True, multiple=True, callback=number_list(int),
              metavar="LIST",
              help="Memory clocks to measure at, MHz: 877,1215 (or repeat it).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1),
              help="Runs of the command at each setting.")
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(min=0),
              help="Runs of the command at each setting before the measured ones, not "
                   "stored: application clocks are a ceiling the GPU ramps up to under load.")
@click.option("--kernel", help="Kernel name of the runs (default: the command's file name).")
@click.option("--suite", default="measured", show_default=True,
              help="Kernel suite: kernel_id = '<suite>/<kernel>'.")
@click.option("--experiment", help="Experiment the runs join (default: measured-<gpu>).")
@click.option("--gpu", "gpu_id", callback=gpu_name,
              help="gpu_id of the GPU (default: NVML's name in lower case, e.g. "
                   "nvidia-a100-sxm4-40gb).")
@click.option("--device", default=0, show_default=True, type=click.IntRange(min=0),
              help="NVML index of the GPU to measure on.")
@click.option("--sms", type=click.IntRange(min=1),
              help="SM count, where NVML does not report it.")
@click.option("--sample-ms", default=10.0, show_default=True, type=Finite(min=1),
              help="Interval of the clock, throttle and (without an energy counter) power "
                   "samples, ms.")
@click.pass_obj
@friendly_errors
@writes
def measure(obj: Context, command, core_mhz, mem_mhz, repeat, warmup, kernel, suite, experiment,
            gpu_id, device, sms, sample_ms):
    """Run a command on an NVIDIA GPU at each core x memory clock setting and store each
    repetition as a measured run (needs pip install 'gpudb-dvfs[nvml]').

    Clocks are locked through NVML where the driver permits, else set as application clocks;
    where neither is permitted (usually: not root) the call stops with one line. Energy comes
    from the GPU's energy counter (Volta and later), else from power sampled every --sample-ms;
    the clocks seen and the throttle reasons become metrics. --warmup runs at each setting
    come first and are not stored. The SM count comes from NVML, else the CUDA driver, else
    --sms. Each setting's runs are stored when it completes; the default clocks are restored
    at the end, on an error and on Ctrl-C.
    Clocks the GPU does not support are refused before anything runs.

    Example:

    \b
        gpudb measure --core-mhz 1380,1530 --mem-mhz 877 --repeat 3 \\
            -- ./my_app --size 4096
    """
    from gpudb.sources.nvml import measure as m

    gpu = m.open_gpu(device)
    try:
        settings = m.plan(core_mhz, mem_mhz, gpu.supported_clocks(), gpu.name)
        gid = gpu_id or m.gpu_id_of(gpu.name)
        target = m.Target(experiment or m.default_experiment(gid), gid,
                          kernel or m.kernel_name(command), suite, m.sm_count(gpu, sms))
        with obj.database() as database:
            added = m.measure(database.con, gpu, command, settings, repeat, target,
                              progress=lambda setting, done: echo(_setting_line(setting, done)),
                              warn=lambda line: echo(f"Warning: {line}", err=True),
                              interval_s=sample_ms / 1000, warmup=warmup)
    except m.MeasureStopped as stop:
        # an exit, not an error: a new database file keeps the settings measured before
        echo(f"Error: {stop} ({stop.settings_stored} settings before it stored and "
             f"kept in {obj.path})", err=True)
        sys.exit(1)
    except m.MeasureInterrupted as stop:
        import signal

        echo(f"interrupted ({signal.Signals(stop.signum).name}): "
             f"{stop.settings_stored} settings stored and kept; clocks restored", err=True)
        sys.exit(128 + stop.signum)
    finally:
        gpu.close()
    echo(f"{added} runs added to experiment {target.experiment!r} of {obj.path}")


def _setting_line(setting, done) -> str:
    """One setting measured: its clocks and lock method, the runs' mean time and energy
    (and where it came from), the clocks seen and any clock-event reasons."""
    first = done[0]
    clocks = [x.samples for x in done]
    line = (f"core {setting.core_mhz} MHz, memory {setting.mem_mhz} MHz "
            f"({first.lock_method} clocks): {len(done)} runs, "
            f"{sum(x.time_ns for x in done) / len(done) / 1e9:.3f} s, "
            f"{sum(x.energy_j for x in done) / len(done):.3f} J "
            f"({'energy counter' if first.energy_from_counter else 'sampled power'})"
            f"; seen: SM {_mean([v for c in clocks for v in c.sm_mhz]):.0f} MHz, "
            f"memory {_mean([v for c in clocks for v in c.mem_mhz]):.0f} MHz")
    reasons = 0
    for c in clocks:
        reasons |= c.reasons
    return line + (f", clock-event reasons 0x{reasons:x}" if reasons else "")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
