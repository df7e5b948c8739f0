"""Ctrl-C in the Python API, in a plain process and in a real Jupyter kernel (ipykernel).

The statement is a cross join of two 1e6-row ranges: 1e12 pairs, hours of work. DuckDB's own
check of SIGINT let it run on for minutes (docs/DESIGN.md section 7); before the API's methods
ran under gpudb's signal watcher, Ctrl-C (or a notebook's "interrupt the kernel") in
``db.sql_table`` did not end it within 60 s. Each run here is bounded by a timeout, so a
regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import subprocess
import sys
import time


CROSS = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range < 0"

# SIGINT 1 s into the statement from a thread of the process; a wakeup fd set before gpudb's
# (as an asyncio loop sets its own) must still get the signal's byte after the block.
SCRIPT = f"""
import os, signal, socket, sys, threading, time
import gpudb
db = gpudb.open(sys.argv[1])
mine_r, mine_w = socket.socketpair()
mine_w.setblocking(False)
signal.set_wakeup_fd(mine_w.fileno())
sent = []
def send():
    time.sleep(1.0)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=send, daemon=True).start()
try:
    db.sql_table({CROSS!r})
    print("ended without an interrupt")
except KeyboardInterrupt:
    late = time.perf_counter() - sent[0]
    mine_r.setblocking(False)
    print("interrupted", round(late, 2), signal.SIGINT in mine_r.recv(64),
          signal.set_wakeup_fd(-1) == mine_w.fileno(), db.sql_table("SELECT 41 + 1").rows)
"""


def test_ctrl_c_ends_an_api_statement_and_passes_the_signal_on(fresh_db):
    got = subprocess.run([sys.executable, "-c", SCRIPT, str(fresh_db)], capture_output=True,
                         text=True, timeout=90)
    assert got.returncode == 0, got.stderr
    word, late, forwarded, restored, rows = got.stdout.split(" ", 4)
    assert word == "interrupted"
    # within a second or two of the signal (0.01 s measured), not the minutes DuckDB took
    assert float(late) < 10
    # the wakeup fd taken over got its signal, and is the process's again after the block
    assert (forwarded, restored, rows.strip()) == ("True", "True", "[(42,)]")


def test_in_a_jupyter_kernel_the_file_opens_and_interrupt_ends_the_cell(fresh_db, tmp_path):
    """A Jupyter kernel without ipywidgets: DuckDB 2.0.1 starts there with its progress bar
    off and refuses to set it at all, which failed gpudb.open; then the stop button (SIGINT
    to the kernel) ends a long cell, and the kernel runs the next one."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    # a kernel of this Python, whatever kernels the machine has installed
    spec = tmp_path / "kernels" / "gpudb-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "gpudb test", "language": "python"}))
    km = KernelManager(kernel_name="gpudb-test", kernel_spec_manager=KernelSpecManager(
        kernel_dirs=[str(tmp_path / "kernels")]))
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        def run(code: str) -> dict:
            return kc.execute_interactive(code, timeout=60, output_hook=lambda msg: None)

        opened = run(f"import gpudb; db = gpudb.open({str(fresh_db)!r})")["content"]
        assert opened["status"] == "ok", opened
        msg_id = kc.execute(f"db.sql_table({CROSS!r})")
        time.sleep(3.0)
        km.interrupt_kernel()
        start = time.perf_counter()
        while True:
            reply = kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        late = time.perf_counter() - start
        assert (reply["content"]["status"], reply["content"]["ename"]) == (
            "error", "KeyboardInterrupt")
        assert late < 20      # 3.5-3.8 s measured: the kernel prints the traceback
        assert run("assert db.sql_table('SELECT 41 + 1').rows == [(42,)]")["content"][
            "status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_duckdbs_own_interrupt_reaches_the_caller_as_keyboardinterrupt(fresh_db):
    """When DuckDB's own check of SIGINT comes before gpudb's watcher, DuckDB takes the
    KeyboardInterrupt and raises RuntimeError('Query interrupted') (the test above failed so
    once in five full runs): an API method turns it back into the KeyboardInterrupt; any
    other RuntimeError passes as it is."""
    import pytest

    import gpudb
    from gpudb.api import _interruptible

    @_interruptible
    def stopped(self):
        raise RuntimeError("Query interrupted")

    @_interruptible
    def failed(self):
        raise RuntimeError("something else")

    db = gpudb.open(fresh_db)
    try:
        with pytest.raises(KeyboardInterrupt):
            stopped(db)
        with pytest.raises(RuntimeError, match="something else"):
            failed(db)
        assert db.sql_table("SELECT 41 + 1").rows == [(42,)]
    finally:
        db.close()
