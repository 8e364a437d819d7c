"""One serving replica, simulated iteration by iteration under a replica scheduler
(:mod:`dlsched.serving.schedulers`: its contract is in
:mod:`dlsched.serving.schedulers.base`), or request by request under static batching.

Event-driven at iteration granularity: the replica runs one iteration at a time, each as long
as the performance model says for its composition (prefill chunks and decodes together);
arrivals join at the next iteration boundary, and an idle replica jumps to the next arrival.
The cost per decode step does not grow with the batch: every running request decodes in
every iteration, and a running request's context is ``base + step`` (``step`` counts the
replica's decode steps), so the batch's context total is kept as a sum, requests are retired
from a heap keyed by the step they finish at, and the KV blocks a step needs are counted by
context residue modulo the block size (a request needs a new block exactly when its context
is a multiple of the block size). The scheduler is asked only when a prompt is part-way or
waiting.

KV memory (vLLM's policy): a request is admitted only while its blocks fit beside the
watermark; when a decode step needs more blocks than are free, the newest admitted requests
are preempted and recomputed later (their prompt and the tokens they had generated are
prefilled again, and generation continues where it stopped). The oldest admitted request is
never preempted while another holds memory, so every request finishes. A request whose
prompt and output together can never fit is rejected on arrival.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field

from dlsched.serving.config import ReplicaConfig
from dlsched.serving.log import ServingLog
from dlsched.serving.perf.model import IterationModel, chunk_pairs
from dlsched.serving.schedulers import replica_schedulers
from dlsched.serving.schedulers.base import ReplicaScheduler, ReplicaView

Observer = Callable[[float, int, int, int, int, int], None]
"""Called after every iteration of an iteration-level replica with its end time, prefill
tokens, prefill chunks, decoding requests, the KV blocks in use during it and the requests
holding memory (for tests and benches)."""


@dataclass(frozen=True)
class RequestColumns:
    """What the simulator reads of each request, by request index: arrival time (s), prompt
    and output tokens."""

    arrivals: Sequence[float]
    prompts: Sequence[int]
    outputs: Sequence[int]


@dataclass(slots=True)
class ReplicaState:
    """What a router sees of a replica while it runs: KV blocks free, blocks the prompts
    routed to it still wait for, requests it holds (running or waiting), and tokens (prompt +
    output) of the requests routed to it and not yet finished."""

    free_blocks: int
    queued_blocks: int = 0
    held: int = 0
    outstanding: int = 0


@dataclass
class ReplicaSamples:
    """The replica's state about every ``every`` seconds: time, requests holding KV memory,
    requests waiting, and the fraction of KV blocks in use."""

    every: float = 1.0
    time: list[float] = field(default_factory=list)
    replica: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    kv_used: list[float] = field(default_factory=list)

    def add(self, at: float, replica: int, running: int, waiting: int, kv: float) -> None:
        self.time.append(at)
        self.replica.append(replica)
        self.running.append(running)
        self.waiting.append(waiting)
        self.kv_used.append(kv)


def scheduler_for(config: ReplicaConfig, model: IterationModel) -> ReplicaScheduler:
    """The scheduler ``config`` names, built for ``model``; ValueError when it cannot run
    ``config`` (one line naming why)."""
    cls = replica_schedulers()[config.scheduler]
    if config.preemption == "swap" and not cls.preempts:
        raise ValueError(f"--preemption swap: the {cls.name} scheduler never preempts")
    return cls(config, model)


def decode_replica_schedulers() -> tuple[str, ...]:
    """The schedulers that can run the decode replica of a disaggregated deployment."""
    found = replica_schedulers()
    return tuple(n for n in found if found[n].iteration_level and found[n].decode_replica)


def check_decode_replica(config: ReplicaConfig) -> None:
    """ValueError (one line) unless ``config``'s scheduler can run a decode replica: requests
    arrive there with their prompt's KV cache, which only a scheduler of paged blocks that
    admits them into the running decodes takes."""
    able = decode_replica_schedulers()
    if config.scheduler not in able:
        raise ValueError(
            f"a decode replica runs {' or '.join(able)} (paged KV blocks taking transferred "
            f"caches), not {config.scheduler!r}"
        )


def simulate_replica(
    index: int,
    ids: Sequence[int],
    requests: RequestColumns,
    config: ReplicaConfig,
    model: IterationModel,
    log: ServingLog,
    samples: ReplicaSamples,
    prefilled: bool = False,
    start: float = 0.0,
    observe: Observer | None = None,
) -> tuple[int, int]:
    """Serve requests ``ids`` (indices into ``requests``, in arrival order) on replica
    ``index``, writing outcomes to ``log``. Returns the most KV blocks in
    use at once (never more than ``config.kv_blocks``) and the blocks still in use at the
    end (0: every block taken was given back).

    ``prefilled``: a decode replica of a disaggregated deployment — every request arrives with
    its prompt's KV cache and its first token (``log.first_token``) from a prefill replica,
    so it joins the decodes once its blocks are free, without a prefill here (a request
    preempted here is recomputed here); only the schedulers of
    :func:`decode_replica_schedulers` take this. ``start``: when the replica is ready
    (requests that arrived earlier wait for it). ``observe``: see :data:`Observer`."""
    if prefilled:
        check_decode_replica(config)
    scheduler = scheduler_for(config, model)
    if not scheduler.iteration_level:
        return _static(index, ids, requests, config, model, log, samples, start)
    transferred = set(ids) if prefilled else set()
    steps = iteration_steps(
        index, ids, requests, config, model, log, samples, transferred, start, None, observe
    )
    try:
        next(steps)
    except StopIteration as done:
        result: tuple[int, int] = done.value
        return result
    raise AssertionError("a replica without a state never yields")


def _arrive(
    index: int,
    ids: Sequence[int],
    ptr: int,
    now: float,
    requests: RequestColumns,
    blocks: Callable[[int], int],
    limit: int,
    log: ServingLog,
    waiting: deque[int],
) -> int:
    """Queue on replica ``index`` every request of ``ids[ptr:]`` that has arrived by ``now``
    (rejecting one whose prompt and output need more than ``limit`` blocks); the position of
    the first request still to come."""
    arrivals, prompts, outputs = requests.arrivals, requests.prompts, requests.outputs
    while ptr < len(ids) and arrivals[ids[ptr]] <= now:
        i = ids[ptr]
        ptr += 1
        log.replica[i] = index
        if blocks(prompts[i] + outputs[i]) > limit:
            log.rejected[i] = True
            log.settled += 1
        else:
            waiting.append(i)
    return ptr


def iteration_steps(
    index: int,
    ids: Sequence[int],
    requests: RequestColumns,
    config: ReplicaConfig,
    model: IterationModel,
    log: ServingLog,
    samples: ReplicaSamples,
    transferred: set[int],
    start: float,
    state: ReplicaState | None = None,
    observe: Observer | None = None,
) -> Generator[float, bool | None, tuple[int, int]]:
    """An iteration-level replica as a generator. Without ``state`` it serves ``ids`` to the
    end without yielding. With ``state``, ``ids`` may grow while it runs (a router appends to
    it): it yields its clock after every iteration and ``inf`` when it has nothing to do,
    keeping ``state`` current; sending True at an ``inf`` ends it. Returns the most KV blocks
    in use at once and the blocks still in use at the end."""
    scheduler = scheduler_for(config, model)
    if not scheduler.iteration_level:
        raise ValueError(f"the {scheduler.name} scheduler does not run iteration by iteration")
    plan = scheduler.plan
    reserve = scheduler.reserves_output
    arrivals, prompts, outputs = requests.arrivals, requests.prompts, requests.outputs
    bt = config.block_tokens
    total = config.kv_blocks
    limit = total - config.watermark_blocks
    max_seqs = config.max_seqs
    step_time = model.iteration_time
    gen, first, finish, last = log.generated, log.first_token, log.finish, log.last_token

    waiting: deque[int] = deque()
    admitted: dict[int, None] = {}  # every request holding KV blocks, oldest first
    prefilling: dict[int, int] = {}  # request -> prompt tokens prefilled so far
    reserved: dict[int, int] = {}  # blocks held by a prompt being prefilled
    base: dict[int, int] = {}  # decoding request -> context minus decode steps
    joined_at: dict[int, int] = {}  # decoding request -> decode step it joined at
    run_start: dict[int, float] = {}  # decoding request -> when its run's first token came
    lost_at: dict[int, float] = {}  # preempted request -> when its last token came
    swap = config.preemption == "swap"
    swapped: set[int] = set()  # requests whose KV cache waits in host memory
    view = ReplicaView(
        prompts, outputs, gen, (transferred, swapped), bt, reserve, prefilling, waiting
    )
    copying = 0.0  # seconds of KV copies over PCIe that stall the next iteration
    epoch: dict[int, int] = {}
    heap: list[tuple[int, int, int]] = []  # (decode step it finishes at, request, epoch)
    residue = [0] * bt
    joiners: list[int] = []
    used = peak = 0
    step = 0
    sum_base = ndec = 0
    now = last_decode = next_sample = start
    ptr = 0

    def held_blocks(i: int, context: int) -> int:
        """Blocks request ``i`` holds with ``context`` tokens cached."""
        return -(-(prompts[i] + outputs[i]) // bt) if reserve else -(-context // bt)

    def preempt_newest() -> int:
        """Preempt the newest admitted request; the blocks it frees."""
        nonlocal sum_base, ndec, copying
        victim = next(reversed(admitted))
        del admitted[victim]
        epoch[victim] = epoch.get(victim, 0) + 1
        log.preemptions[victim] += 1
        if victim in prefilling:
            del prefilling[victim]
            freed = reserved.pop(victim)
        else:
            b = base.pop(victim)
            freed = held_blocks(victim, b + step)
            residue[b % bt] -= 1
            sum_base -= b
            ndec -= 1
            steps = step - joined_at.pop(victim)
            gen[victim] += steps
            started = run_start.pop(victim)
            lost_at[victim] = last_decode if steps else started
            if victim in joiners:
                joiners.remove(victim)
            if swap:
                swapped.add(victim)
                copying += (b + step) * config.swap_s_per_token
        waiting.appendleft(victim)
        if state is not None:
            back = resumed_context(victim) if victim in swapped else prompts[victim] + gen[victim]
            state.queued_blocks += -(-back // bt)
        return freed

    def deliver(i: int, context: int, holding: int) -> None:
        """Request ``i``, holding ``holding`` blocks, got a token from a prefill of
        ``context`` tokens (at ``now``)."""
        nonlocal used
        got = gen[i] + 1
        gen[i] = got
        if math.isnan(first[i]):
            first[i] = now
        else:
            log.gap(now - lost_at.pop(i))
        if got >= outputs[i]:
            finish[i] = last[i] = now
            log.settled += 1
            del admitted[i]
            used -= holding
            if state is not None:
                state.outstanding -= prompts[i] + outputs[i]
            return
        used += held_blocks(i, context) - holding
        join(i, context, now)

    def join(i: int, context: int, started: float) -> None:
        """Request ``i``, holding ``context`` tokens of KV cache, joins the decodes; the token
        its run began with came at ``started``."""
        nonlocal sum_base, ndec
        b = context - step
        base[i] = b
        residue[b % bt] += 1
        sum_base += b
        ndec += 1
        joined_at[i] = step
        run_start[i] = started
        heapq.heappush(heap, (step + outputs[i] - gen[i], i, epoch.get(i, 0)))
        joiners.append(i)

    def admit(i: int, need: int, queued: int) -> None:
        """Admit ``i``, the first waiting request, into ``need`` KV blocks (``queued``: the
        blocks a router counted it as waiting for)."""
        nonlocal used
        waiting.popleft()
        admitted[i] = None
        used += need
        if state is not None:
            state.queued_blocks -= queued

    def resumed_context(i: int) -> int:
        """KV tokens request ``i`` brings back: its prompt from a prefill replica, or every
        token but the newest from host memory (the newest is the next step's input)."""
        return prompts[i] if i in transferred else prompts[i] + gen[i] - 1

    def resume(i: int, context: int) -> None:
        """Request ``i``, admitted with its KV cache from elsewhere, joins the decodes."""
        nonlocal copying
        if i in transferred:
            transferred.discard(i)
            join(i, context, first[i])
            return
        swapped.discard(i)
        copying += context * config.swap_s_per_token
        join(i, context, lost_at.pop(i))

    def broken(what: str) -> RuntimeError:
        return RuntimeError(f"replica scheduler {scheduler.name!r} {what}")

    while True:
        if ptr < len(ids) and arrivals[ids[ptr]] <= now:
            ptr = _arrive(index, ids, ptr, now, requests, config.blocks, limit, log, waiting)
        if not admitted and not waiting:
            if ptr >= len(ids):
                if state is None:
                    break
                state.free_blocks, state.held = total - used, 0
                if (yield math.inf):
                    break
                continue
            now = max(now, arrivals[ids[ptr]])
            continue
        if now >= next_sample:
            samples.add(now, index, len(admitted), len(waiting), used / total)
            next_sample = now + samples.every

        # KV caches that come back (swapped out, or from a prefill replica), first in line.
        while (swapped or transferred) and waiting and len(admitted) < max_seqs:
            i = waiting[0]
            if i not in swapped and i not in transferred:
                break
            context = resumed_context(i)
            need = held_blocks(i, context)
            if used + need > limit:
                break
            admit(i, need, -(-context // bt))
            resume(i, context)
        # Every running request decodes; the newest make way when blocks run out.
        preempted = False
        if ndec and not reserve:
            need = residue[-step % bt]
            while used + need > total:
                victim_base = base.get(next(reversed(admitted)))
                if victim_base is not None and (victim_base + step) % bt == 0:
                    need -= 1
                used -= preempt_newest()
                preempted = True
            used += need
        prefill_tokens = seqs = 0
        pairs = 0.0
        completed: list[tuple[int, int]] = []
        if prefilling or waiting:
            view.decodes, view.held, view.free = ndec, len(admitted), limit - used
            view.preempted = preempted
            for i, take in plan(view):
                done = prefilling.get(i)
                context = prompts[i] + gen[i]
                if done is None:
                    if not waiting or waiting[0] != i or i in swapped or i in transferred:
                        raise broken(f"took request {i}, not the first waiting one")
                    need = held_blocks(i, context)
                    if used + need > limit:
                        raise broken(f"admitted request {i} without free KV blocks")
                    admit(i, need, -(-context // bt))
                    reserved[i] = need
                    done = 0
                if not 0 < take <= context - done:
                    raise broken(f"gave request {i} {take} tokens, {context - done} left")
                prefill_tokens += take
                pairs += chunk_pairs(take, done)
                seqs += 1
                prefilling[i] = done + take
                if done + take == context:
                    completed.append((i, context))
        if used > peak:
            peak = used
        if ndec:
            duration = step_time(prefill_tokens, pairs, seqs, ndec, sum_base + ndec * step)
        else:
            duration = step_time(prefill_tokens, pairs, seqs, 0, 0)
        duration += copying
        copying = 0.0
        now += duration
        log.ran(index, duration)
        if observe is not None:
            observe(now, prefill_tokens, seqs, ndec, used, len(admitted))
        if ndec:
            step += 1
            log.gap(now - last_decode, ndec - len(joiners))
            for j in joiners:
                log.gap(now - run_start[j])
            joiners.clear()
            last_decode = now
            while heap and heap[0][0] <= step:
                _, i, ep = heapq.heappop(heap)
                if epoch.get(i, 0) != ep or i not in base:
                    continue
                b = base.pop(i)
                if reserve:
                    used -= -(-(prompts[i] + outputs[i]) // bt)
                else:
                    used -= -(-(b + step) // bt)
                residue[b % bt] -= 1
                sum_base -= b
                ndec -= 1
                del joined_at[i], run_start[i], admitted[i]
                gen[i] = outputs[i]
                finish[i] = last[i] = now
                log.settled += 1
                if state is not None:
                    state.outstanding -= prompts[i] + outputs[i]
        for i, context in completed:
            del prefilling[i]
            deliver(i, context, reserved.pop(i))
        if state is not None:
            state.free_blocks, state.held = total - used, len(admitted) + len(waiting)
            yield now
    return peak, used


def _static(
    index: int,
    ids: Sequence[int],
    requests: RequestColumns,
    config: ReplicaConfig,
    model: IterationModel,
    log: ServingLog,
    samples: ReplicaSamples,
    start: float,
) -> tuple[int, int]:
    """Request-level batching: when idle, take up to ``max_batch`` waiting requests (oldest
    first) whose padded batch fits in KV memory; prefill them padded to the longest prompt,
    decode padded to the longest output; every request completes with the batch."""
    arrivals, prompts, outputs = requests.arrivals, requests.prompts, requests.outputs
    bt, total = config.block_tokens, config.kv_blocks
    waiting: deque[int] = deque()
    now = next_sample = start
    peak = 0
    n, ptr = len(ids), 0
    while True:
        if ptr < n and arrivals[ids[ptr]] <= now:
            ptr = _arrive(index, ids, ptr, now, requests, config.blocks, total, log, waiting)
        if not waiting:
            if ptr >= n:
                break
            now = max(now, arrivals[ids[ptr]])
            continue
        batch: list[int] = []
        longest_prompt = longest_output = 0
        while waiting and len(batch) < config.max_batch:
            i = waiting[0]
            p, o = max(longest_prompt, prompts[i]), max(longest_output, outputs[i])
            if batch and (len(batch) + 1) * -(-(p + o) // bt) > total:
                break
            waiting.popleft()
            batch.append(i)
            longest_prompt, longest_output = p, o
        size = len(batch)
        blocks = size * -(-(longest_prompt + longest_output) // bt)
        peak = max(peak, blocks)
        if now >= next_sample:
            samples.add(now, index, size, len(waiting), blocks / total)
            next_sample = now + samples.every
        prefill = model.iteration_time(
            size * longest_prompt, size * chunk_pairs(longest_prompt, 0), size, 0, 0
        )
        now += prefill
        log.ran(index, prefill)
        for i in batch:
            log.first_token[i] = now
            log.generated[i] = 1
        for i in batch:
            log.last_token[i] = now
        for k in range(1, longest_output):
            began = now
            now += model.iteration_time(0, 0.0, 0, size, size * (longest_prompt + k - 1))
            log.ran(index, now - began)
            emitting = [i for i in batch if outputs[i] > k]
            log.gap(now - began, len(emitting))
            for i in emitting:
                log.generated[i] += 1
                log.last_token[i] = now
        for i in batch:
            log.finish[i] = now
        log.settled += len(batch)
    return peak, 0
