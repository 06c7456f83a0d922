"""A build worker whose jobs of one kind ($SQLKV_TEST_GATE: flush or compact) park midway
until killed (test_storage_close runs it as the worker command): after GATE_AT entries the
job creates the file $SQLKV_TEST_PARKED and sleeps."""

import os
import time

from sqlkv.storage.lsm import worker

GATE_AT = 5000
_real = worker.gc_entries
_gated_job = worker._JOBS[os.environ["SQLKV_TEST_GATE"]]
_in_gated_job = False


def _gated(entries, *args):
    def slow():
        for i, entry in enumerate(entries):
            if i == GATE_AT and _in_gated_job:
                open(os.environ["SQLKV_TEST_PARKED"], "w").close()
                time.sleep(600)
            yield entry
    return _real(slow(), *args)


def _mark(*args):
    global _in_gated_job
    _in_gated_job = True
    return _gated_job(*args)


worker.gc_entries = _gated
worker._JOBS[os.environ["SQLKV_TEST_GATE"]] = _mark
worker.serve()
