"""Bad rows in every format: the exact ``file:line: field`` of each error, and skip_bad_rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dlsched.trace import TraceError, read_trace

WriteFile = Callable[[str, str], Path]

PHILLY = """\
job_id,submit_time,submit_s,duration_s,num_gpus,gpu_time_s,vc
1,2017-09-04 10:30:41,0,100,8,800,a
2,2017-09-04 10:30:51,10,100,0,0,a
3,2017-09-04 10:31:41,60,-5,1,-5,a
4,2017-09-04 10:32:41,60,10,1,10,a
5,2017-09-04 10:30:51,10,abc,1,10,a
6,2017-09-04 10:30:51,10,inf,1,10,a
7,2017-09-04 10:30:51,10,10,2,30,a
8,2017-09-04 10:30:51,10,10,1.5,15,a
9,2017-09-04 10:30:51,10,10,1,10
1,2017-09-04 10:30:51,10,10,1,10,a
10,2017-09-04 10:30:51,10,10,-2,-20,a
11,04/09/2017 10:30:51,10,10,1,10,a
12,2017-09-04 10:30:43,2,10,2.0,20,b
"""

PHILLY_ERRORS = [
    (3, "num_gpus", "0 GPUs"),
    (4, "duration_s", "negative duration"),
    (5, "submit_time", "wall time is 120 s after the trace origin but submit_s is 60"),
    (6, "duration_s", "not a number: 'abc'"),
    (7, "duration_s", "not a finite number: 'inf'"),
    (8, "gpu_time_s", "30 is not duration_s * num_gpus = 20"),
    (9, "num_gpus", "not an integer: '1.5'"),
    (10, "(row)", "6 fields, the header has 7"),
    (11, "job_id", "duplicate job_id '1' (first on line 2)"),
    (12, "num_gpus", "negative GPU count: -2"),
    (13, "submit_time", "not a time of the form YYYY-MM-DD HH:MM:SS"),
]

GAVEL = """\
job_id,vc,gpu_num,submit_time,duration,job_type,total_steps
0,v1,1,0,100,ResNet-18 (batch size 32),1000
1,v1,0,5,100,ResNet-18 (batch size 32),1000
2,v1,1,-1,100,ResNet-18 (batch size 32),1000
3,v1,1,5,100,,1000
4,v1,1,5,100,ResNet-18 (batch size 32),-3
5,,1,5,100,ResNet-18 (batch size 32),10
6,v2,4,7,NaN,ResNet-18 (batch size 32),10
7,v2,4,7,50,ResNet-18 (batch size 32),10
"""

GAVEL_ERRORS = [
    (3, "gpu_num", "0 GPUs"),
    (4, "submit_time", "negative submit time: -1"),
    (5, "job_type", "missing value"),
    (6, "total_steps", "negative: -3"),
    (7, "vc", "missing value"),
    (8, "duration", "not a finite number: 'NaN'"),
]

HELIOS = """\
job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
j1,u1,vcA,train,8,32,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,2020-04-01 01:01:00,3600,50
j2,u2,vcA,,0,4,1,FAILED,2020-04-01 00:00:00,2020-04-01 00:00:05,2020-04-01 00:00:35,30,5
j3,u1,vcB,x,1,4,1,CANCELLED,2020-04-01 00:02:00,,,,
j4,u1,vcB,x,1,4,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:05:00,100,60
j5,u1,vcB,x,1,4,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:02:00,2020-04-01 00:05:00,180,-60
j6,u1,vcB,x,1,4,1,RUNNING,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:05:00,60,60
j7,u1,vcB,x,1,4,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:03:30,,
j1,u1,vcB,x,1,4,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:05:00,60,60
j8,u1,vcB,x,-1,4,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:05:00,60,60
j9,u1,vcB,x,1,4,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:05:00,60,10
j10,u1,vcB,x,1,4,1,FAILED,2020-04-01 00:03:00,,2020-04-01 00:05:00,,
j11,u1,vcB,x,1,4,1,CANCELLED,2020-04-01 00:03:00,,,5,
j12,u1,vcB,x,1,four,1,COMPLETED,2020-04-01 00:03:00,2020-04-01 00:04:00,2020-04-01 00:05:00,60,60
"""

HELIOS_ERRORS = [
    (5, "duration", "100 s disagrees with the time stamps (60 s)"),
    (6, "start_time", "start 120 s is before submit 180 s"),
    (7, "state", "unknown state 'RUNNING'"),
    (8, "end_time", "end 210 s is before start 240 s"),
    (9, "job_id", "duplicate job_id 'j1' (first on line 2)"),
    (10, "gpu_num", "negative GPU count: -1"),
    (11, "queue", "10 s disagrees with the time stamps (60 s)"),
    (12, "start_time", "missing value"),
    (13, "duration", "5 s given but the job has no start/end time"),
    (14, "cpu_num", "not a number: 'four'"),
]

ALIBABA = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,12000,16384,1,1000,,LS,Running,0,100,0
p1,12000,16384,1,0,,LS,Running,0,100,0
p2,12000,16384,0,0,,LS,Running,0,100,0
p3,12000,16384,0,500,,LS,Running,0,100,0
p4,12000,16384,1,1500,,LS,Running,0,100,0
p5,12000,16384,1,500,V100M16|V100M32,LS,Pending,10,100,
p6,12000,16384,1,500,,LS,Pending,10,100,20
p7,12000,16384,1,500,,LS,Failed,10,100,
p8,12000,16384,1,500,,LS,Failed,10,5,20
p9,12000,16384,1,500,,LS,Failed,10,50,5
p10,12000,16384,1,500,,LS,Evicted,10,50,15
p11,12000,16384,2,1000,,LS,Succeeded,10,50,15
p12,-4000,16384,1,1000,,LS,Succeeded,10,50,15
"""

ALIBABA_ERRORS = [
    (3, "gpu_milli", "0 is outside 1..1000 for a GPU job"),
    (5, "gpu_milli", "500 for a pod without GPUs"),
    (6, "gpu_milli", "1500 is outside 1..1000 for a GPU job"),
    (8, "scheduled_time", "a Pending pod cannot have been scheduled"),
    (9, "scheduled_time", "missing value"),
    (10, "deletion_time", "end 5 s is before start 20 s"),
    (11, "scheduled_time", "start 5 s is before submit 10 s"),
    (12, "pod_phase", "unknown phase 'Evicted'"),
    (14, "cpu_milli", "negative: -4"),
]

POLLUX = """\
name,time,application,num_replicas,batch_size
cifar10-0,53,cifar10,6,2048
cifar10-1,54,cifar10,0,2048
bert-2,55,bert,2,0
bert-3,x,bert,2,12
bert-4,56,bert,2,12.5
bert-5,57,bert,2,12
"""

POLLUX_ERRORS = [
    (3, "num_replicas", "0 GPUs"),
    (4, "batch_size", "not a positive batch size: 0"),
    (5, "time", "not a number: 'x'"),
    (6, "batch_size", "not an integer: '12.5'"),
]

CANONICAL = """\
job_id,submit_time,num_gpus,duration,state,gpu_milli,work,work_unit,start_time,end_time
a,0,1,10,COMPLETED,500,,,,
b,1,0,10,COMPLETED,,,,,
c,2,1,10,DONE,,,,,
d,3,1,10,,,100,,,
e,4,1,10,,,100,steps,,
f,5,1,-10,,,,,,
g,6,1,10,,0,,,,
h,7,1,10,,,,,8,7
i,8,1,10,,,,,9,19
"""

CANONICAL_ERRORS = [
    (4, "state", "unknown value 'DONE'"),
    (5, "work_unit", "missing value (work is given)"),
    (6, "work_unit", "unknown value 'steps'"),
    (7, "duration", "negative duration: -10"),
    (8, "gpu_milli", "0 is outside 1..1000 for a GPU job"),
    (9, "end_time", "end 7 s is before start 8 s"),
]

CASES = {
    "philly": (PHILLY, PHILLY_ERRORS),
    "gavel-philly": (GAVEL, GAVEL_ERRORS),
    "helios": (HELIOS, HELIOS_ERRORS),
    "alibaba-2023": (ALIBABA, ALIBABA_ERRORS),
    "pollux": (POLLUX, POLLUX_ERRORS),
    "canonical": (CANONICAL, CANONICAL_ERRORS),
}


def _count_rows(text: str) -> int:
    return sum(1 for line in text.splitlines()[1:] if line)


@pytest.mark.parametrize("fmt", list(CASES))
def test_bad_rows_raise_with_file_and_line(fmt: str, write_file: WriteFile) -> None:
    text, expected = CASES[fmt]
    path = write_file(f"{fmt}.csv", text)
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    message = str(caught.value)
    assert f"{len(expected)} of {_count_rows(text)} rows rejected" in message
    errors = caught.value.errors
    assert [(e.line, e.field) for e in errors] == [(line, field) for line, field, _ in expected]
    for error, (line, field, reason) in zip(errors, expected, strict=True):
        assert error.path == str(path)
        assert reason in error.reason, (line, field, error.reason)
        assert f"{path}:{line}: {field}: " in message or len(errors) > 20


@pytest.mark.parametrize("fmt", list(CASES))
def test_skip_bad_rows_keeps_the_good_ones(fmt: str, write_file: WriteFile) -> None:
    text, expected = CASES[fmt]
    path = write_file(f"{fmt}.csv", text)
    result = read_trace(path, skip_bad_rows=True)
    assert result.format == fmt
    assert result.rows_read == _count_rows(text)
    assert len(result.errors) == len(expected)
    assert len(result.trace) + len(result.errors) == result.rows_read
    bad_lines = {e.line for e in result.errors}
    rows = text.splitlines()
    id_column = rows[0].split(",").index("name" if fmt in ("alibaba-2023", "pollux") else "job_id")
    good_ids = sorted(
        rows[i - 1].split(",")[id_column] for i in range(2, len(rows) + 1) if i not in bad_lines
    )
    assert sorted(result.trace.column("job_id").to_pylist()) == good_ids


def test_helios_good_rows_are_relative_to_the_earliest_submit(write_file: WriteFile) -> None:
    result = read_trace(write_file("h.csv", HELIOS), skip_bad_rows=True)
    jobs = {job.job_id: job for job in result.trace.jobs()}
    assert set(jobs) == {"j1", "j2", "j3"}
    assert result.trace.origin_unix == 1585699200.0  # 2020-04-01 00:00:00 UTC
    j1 = jobs["j1"]
    assert (j1.submit_time, j1.start_time, j1.end_time, j1.duration) == (10, 60, 3660, 3600)
    assert (j1.user, j1.vc, j1.job_name, j1.num_cpus, j1.num_nodes) == ("u1", "vcA", "train", 32, 1)
    assert jobs["j2"].num_gpus == 0 and jobs["j2"].job_name is None
    j3 = jobs["j3"]
    assert j3.state == "CANCELLED" and j3.start_time is None and j3.duration is None


def test_helios_without_optional_columns(write_file: WriteFile) -> None:
    text = (
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time\n"
        "a,u,v,2,8,1,TIMEOUT,2020-05-01 10:00:00,2020-05-01 10:00:30,2020-05-01 11:00:30\n"
    )
    result = read_trace(write_file("h.csv", text))
    assert result.format == "helios"
    job = next(result.trace.jobs())
    assert (job.submit_time, job.start_time, job.duration, job.job_name) == (0, 30, 3600, None)


def test_more_than_twenty_errors_are_summarized(write_file: WriteFile) -> None:
    text = "job_id,submit_time,num_gpus\n" + "".join(f"j{i},-{i + 1},1\n" for i in range(30))
    path = write_file("c.csv", text)
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    assert len(caught.value.errors) == 30
    assert "... and 10 more" in str(caught.value)
