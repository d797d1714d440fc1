"""Seeded simulation of a related strain from a reference genome, with a truth table.

The simulator plants, in each reference record, the large events that synteny tools must
find — an inversion, a deleted block, an inserted foreign block and a transposed block —
and then small events over the whole rearranged sequence: substitutions and short
insertions and deletions. Every planted event is returned as a :class:`PlantedEvent`
with its coordinates on the reference and on the strain, so tests can check that the
synteny outputs recover them.

Conventions
-----------
* Coordinates are 0-based, half-open, forward strand, in bases.
* The strain is built in two steps. First the reference record is cut into segments
  and re-assembled (inverted segment reverse-complemented, deleted block dropped,
  foreign block inserted, transposed block moved). Then point events are applied to
  the re-assembled text left to right. The large events' strain coordinates are given
  after both steps.
* A deletion has ``strain_start == strain_end`` (the junction in the strain); an
  insertion has ``ref_start == ref_end`` (the junction in the reference). Small
  events inside the inserted foreign block have no reference position (``-1``).
* Large events are placed one per equal slot of the record (the slot order shuffled by
  the seed), so they never overlap; a record too short for its events is refused.
* The same seed, reference and parameters give the same strain and truth table on
  every machine (NumPy's PCG64 generator).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpualign_plugin.errors import InputError
from gpualign_plugin.scoring import reverse_complement_text

BASES = "ACGT"


@dataclass(frozen=True)
class SimulationParameters:
    """What to plant in each record.

    Attributes
    ----------
    inversion_length, deletion_length, insertion_length, transposition_length : int
        Length in bases of each large event; 0 leaves that event out.
    substitution_rate : float
        Probability that a base of the re-assembled strain is substituted.
    indel_rate : float
        Probability that a small insertion or deletion (half each) starts at a base.
    max_indel : int
        Small indel lengths are geometric (p = 0.5) capped at this many bases.
    """

    inversion_length: int = 3000
    deletion_length: int = 2000
    insertion_length: int = 1500
    transposition_length: int = 2500
    substitution_rate: float = 0.005
    indel_rate: float = 0.0005
    max_indel: int = 8

    def __post_init__(self):
        for name in ("inversion_length", "deletion_length", "insertion_length",
                     "transposition_length"):
            if getattr(self, name) < 0:
                raise InputError(f"{name.replace('_', '-')} must be 0 or more, got {getattr(self, name)}")
        for name in ("substitution_rate", "indel_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 0.5:
                raise InputError(f"{name.replace('_', '-')} must be between 0 and 0.5, got {value}")
        if self.max_indel < 1:
            raise InputError(f"max-indel must be 1 or more, got {self.max_indel}")


@dataclass(frozen=True)
class PlantedEvent:
    """One planted event, in the columns of the truth table.

    Attributes
    ----------
    record : str
        Strain record id.
    source : str
        Reference record id it was simulated from.
    event : str
        ``inversion``, ``deletion``, ``insertion``, ``transposition``, ``substitution``,
        ``small_insertion`` or ``small_deletion``.
    ref_start, ref_end : int
        Reference interval (0-based, half-open); equal for an insertion; ``-1`` when
        the event lies inside foreign sequence.
    strain_start, strain_end : int
        Strain interval; equal for a deletion.
    strand : str
        ``-`` for the inversion, ``+`` otherwise.
    length : int
        Event length in bases.
    detail : str
        For a substitution ``REF>ALT``; for a transposition the reference position the
        block was moved to (``to=N``); else empty.
    """

    record: str
    source: str
    event: str
    ref_start: int
    ref_end: int
    strain_start: int
    strain_end: int
    strand: str
    length: int
    detail: str = ""


TRUTH_COLUMNS = ("record", "source", "event", "ref_start", "ref_end", "strain_start",
                 "strain_end", "strand", "length", "detail")
"""Column order of the truth table TSV."""

LARGE_EVENTS = ("inversion", "deletion", "insertion", "transposition")
"""Event types planted once per record (those synteny outputs should recover)."""


@dataclass
class _Segment:
    kind: str           # "ref", "inversion", "foreign"
    ref_start: int
    ref_end: int
    text: str
    event: str = ""     # the large event this segment carries, if any
    detail: str = ""


def simulate_record(record_id: str, source_id: str, text: str, params: SimulationParameters,
                    rng: np.random.Generator) -> tuple[str, list[PlantedEvent]]:
    """Simulate one strain record from one reference record.

    Parameters
    ----------
    record_id : str
        Id of the strain record (written into the events).
    source_id : str
        Id of the reference record.
    text : str
        Reference sequence (DNA; ambiguity codes are kept, case is upper-cased).
    params : SimulationParameters
        Event sizes and rates.
    rng : numpy.random.Generator
        Random source; the caller seeds it.

    Returns
    -------
    strain : str
        The strain sequence.
    events : list of PlantedEvent
        Large events first (in strain order), then small events in strain order.

    Raises
    ------
    InputError
        The record is too short to hold the requested events apart from each other.
    """
    text = text.upper()
    segments = _rearrange(source_id, text, params, rng)
    strain0 = "".join(segment.text for segment in segments)
    starts0 = np.cumsum([0] + [len(segment.text) for segment in segments])
    strain, new_position, small = _point_events(strain0, params, rng)

    def to_ref(position0: int) -> int:
        index = int(np.searchsorted(starts0, position0, side="right")) - 1
        segment = segments[index]
        offset = position0 - int(starts0[index])
        if segment.kind == "foreign":
            return -1
        if segment.kind == "inversion":
            return segment.ref_end - 1 - offset
        return segment.ref_start + offset

    events: list[PlantedEvent] = []
    for index, segment in enumerate(segments):
        s0, e0 = int(starts0[index]), int(starts0[index + 1])
        if segment.event == "deletion":
            junction = int(new_position[s0])
            events.append(PlantedEvent(record_id, source_id, "deletion", segment.ref_start,
                                       segment.ref_end, junction, junction, "+",
                                       segment.ref_end - segment.ref_start))
        elif segment.event:
            start, end = int(new_position[s0]), int(new_position[e0])
            ref_start, ref_end = ((segment.ref_start, segment.ref_start)
                                  if segment.event == "insertion"
                                  else (segment.ref_start, segment.ref_end))
            events.append(PlantedEvent(record_id, source_id, segment.event, ref_start, ref_end,
                                       start, end, "-" if segment.event == "inversion" else "+",
                                       len(segment.text), segment.detail))
    for kind, position0, length, detail in small:
        ref = to_ref(min(position0, len(strain0) - 1))
        start = int(new_position[position0])
        if kind == "small_insertion":
            events.append(PlantedEvent(record_id, source_id, kind, ref, ref, start, start + length,
                                       "+", length))
        elif kind == "small_deletion":
            refs = [to_ref(p) for p in range(position0, position0 + length)]
            ref_start, ref_end = ((-1, -1) if min(refs) < 0 else (min(refs), max(refs) + 1))
            events.append(PlantedEvent(record_id, source_id, kind, ref_start, ref_end, start,
                                       start, "+", length))
        else:
            events.append(PlantedEvent(record_id, source_id, kind, ref, ref + 1 if ref >= 0 else -1,
                                       start, start + 1, "+", 1, detail))
    return strain, events


def _rearrange(source_id: str, text: str, params: SimulationParameters,
               rng: np.random.Generator) -> list[_Segment]:
    """Cut ``text`` into segments carrying the large events, in strain order."""
    wanted = [(name, getattr(params, f"{name}_length")) for name in LARGE_EVENTS]
    wanted = [(name, length) for name, length in wanted if length > 0]
    # The transposition needs two slots: the block's origin and where it goes.
    slots_needed = len(wanted) + (1 if params.transposition_length > 0 else 0)
    if not slots_needed:
        return [_Segment("ref", 0, len(text), text)]
    slot = len(text) // slots_needed
    largest = max(length for _, length in wanted)
    if slot < 2 * largest:
        raise InputError(f"record is {len(text)} bases long, too short to hold the requested "
                         f"events apart (needs at least {2 * largest * slots_needed})",
                         record=source_id)
    order = rng.permutation(slots_needed)
    placed: dict[str, tuple[int, int]] = {}
    names = [name for name, _ in wanted] + (["transposition_target"]
                                             if params.transposition_length > 0 else [])
    for name, slot_index in zip(names, order):
        length = 0 if name in ("insertion", "transposition_target") else getattr(
            params, f"{name}_length")
        low = int(slot_index) * slot + slot // 8
        high = (int(slot_index) + 1) * slot - slot // 8 - length
        start = int(rng.integers(low, max(high, low) + 1))
        placed[name] = (start, start + length)
    foreign = "".join(rng.choice(list(BASES), size=params.insertion_length)) \
        if params.insertion_length > 0 else ""

    # Cut points in reference order; each large event opens or closes a segment.
    segments: list[_Segment] = []
    cursor = 0
    moved = placed.get("transposition")
    for name, (start, end) in sorted(placed.items(), key=lambda item: item[1]):
        if start > cursor:
            segments.append(_Segment("ref", cursor, start, text[cursor:start]))
        cursor = max(cursor, start)
        if name == "inversion":
            segments.append(_Segment("inversion", start, end,
                                     reverse_complement_text(text[start:end]), "inversion"))
        elif name == "deletion":
            segments.append(_Segment("ref", start, end, "", "deletion"))
        elif name == "insertion":
            segments.append(_Segment("foreign", start, start, foreign, "insertion"))
        elif name == "transposition_target":
            segments.append(_Segment("ref", moved[0], moved[1], text[moved[0]:moved[1]],
                                     "transposition", f"to={start}"))
        # The transposed block's origin: nothing is emitted, its bases moved.
        cursor = max(cursor, end)
    if cursor < len(text):
        segments.append(_Segment("ref", cursor, len(text), text[cursor:]))
    return segments


def _point_events(text: str, params: SimulationParameters, rng: np.random.Generator):
    """Apply substitutions and small indels left to right.

    Returns the new text, ``new_position`` (length ``len(text) + 1``: where each old
    position — and the end — lands in the new text) and the small events as
    ``(kind, old_position, length, detail)``.
    """
    n = len(text)
    draws = rng.random(n)
    lengths = np.minimum(rng.geometric(0.5, size=n), params.max_indel)
    kinds = rng.random(n)
    alternatives = rng.integers(0, 3, size=n)
    out: list[str] = []
    out_length = 0
    new_position = np.zeros(n + 1, dtype=np.int64)
    small = []
    i = 0
    sub_rate, indel_rate = params.substitution_rate, params.indel_rate
    while i < n:
        new_position[i] = out_length
        draw = draws[i]
        base = text[i]
        if sub_rate <= draw < sub_rate + indel_rate and 0 < i < n - params.max_indel:
            length = int(lengths[i])
            if kinds[i] < 0.5:
                piece = "".join(BASES[c] for c in rng.integers(0, 4, size=length))
                out.append(piece)
                out_length += len(piece)
                small.append(("small_insertion", i, length, ""))
                new_position[i] = out_length
                out.append(base)
                out_length += 1
                i += 1
            else:
                small.append(("small_deletion", i, length, ""))
                new_position[i:i + length] = out_length
                i += length
            continue
        if draw < sub_rate and base in BASES:
            choices = [b for b in BASES if b != base]
            alt = choices[int(alternatives[i])]
            small.append(("substitution", i, 1, f"{base}>{alt}"))
            base = alt
        out.append(base)
        out_length += 1
        i += 1
    new_position[n] = out_length
    return "".join(out), new_position, small


def simulate_genome(records, params: SimulationParameters, seed: int,
                    prefix: str = "") -> tuple[list[tuple[str, str]], list[PlantedEvent]]:
    """Simulate a strain of every record of a genome.

    Parameters
    ----------
    records : iterable of (str, str)
        ``(id, sequence)`` of each reference record.
    params : SimulationParameters
        Event sizes and rates (the same for every record).
    seed : int
        Seed of the random generator; the same seed gives the same strain.
    prefix : str
        Prepended to each record id to name the strain's record.

    Returns
    -------
    strain : list of (str, str)
        ``(id, sequence)`` of each strain record, in input order.
    events : list of PlantedEvent
        All planted events, record by record.
    """
    rng = np.random.default_rng(seed)
    strain, events = [], []
    for record_id, text in records:
        name = prefix + record_id
        sequence, record_events = simulate_record(name, record_id, text, params, rng)
        strain.append((name, sequence))
        events.extend(record_events)
    return strain, events


def write_truth(handle, events) -> None:
    """Write planted events as a TSV with a header line (:data:`TRUTH_COLUMNS`)."""
    handle.write("\t".join(TRUTH_COLUMNS) + "\n")
    for event in events:
        handle.write("\t".join(str(getattr(event, column)) for column in TRUTH_COLUMNS) + "\n")


def read_truth(path) -> list[PlantedEvent]:
    """Read a truth table written by :func:`write_truth`."""
    events = []
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if tuple(header) != TRUTH_COLUMNS:
            raise InputError("not a gpualign truth table (unexpected header)", path=str(path))
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            values = dict(zip(TRUTH_COLUMNS, fields))
            events.append(PlantedEvent(
                values["record"], values["source"], values["event"], int(values["ref_start"]),
                int(values["ref_end"]), int(values["strain_start"]), int(values["strain_end"]),
                values["strand"], int(values["length"]), values.get("detail", "")))
    return events
