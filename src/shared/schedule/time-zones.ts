// Time zones of the IANA database (docs/api-reference.md 9): a zone's name in its canonical spelling, and its UTC offsets
// over a range as segments of constant offset, which the expansion and the preview's description read the wall clock by.
//
// Every UTC offset and every DST transition comes from the IANA time-zone database through Temporal (the
// @js-temporal/polyfill, on the runtime's ICU data).
import { Temporal } from '@js-temporal/polyfill';
import { MAX_INSTANT } from './types.js';

/** The longest time-zone name accepted; the longest IANA name has 32 characters. */
const MAX_TIME_ZONE_LENGTH = 64;

// IANA names are ASCII letters, digits, `/`, `_`, `-` and `+` ("America/Port-au-Prince", "Etc/GMT+5"), starting with a
// letter. Temporal also takes UTC offsets ("+02:00") and whole ISO strings ("2026-01-01T00:00Z" names UTC) as time
// zones; neither is an IANA name, and a fixed offset would ignore the DST rules a schedule is read by.
const TIME_ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;

const knownZones = new Map<string, string | null>();
const MAX_KNOWN_ZONES = 2048;

/**
 * The time zone's IANA name in its canonical spelling ("europe/berlin" → "Europe/Berlin", "utc" → "UTC"), or null when
 * it is not a name of the IANA time-zone database this runtime carries. What a route stores for `timeZone`.
 */
export function normalizeTimeZone(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_TIME_ZONE_LENGTH || !TIME_ZONE_NAME.test(name)) return null;
  const known = knownZones.get(name);
  if (known !== undefined) return known;
  let id: string | null;
  try {
    id = Temporal.Instant.fromEpochMilliseconds(0).toZonedDateTimeISO(name).timeZoneId;
  } catch {
    id = null;
  }
  if (knownZones.size >= MAX_KNOWN_ZONES) knownZones.clear();
  knownZones.set(name, id);
  return id;
}

/** Is `name` a time zone of the IANA database (docs/api-reference.md 9: an unknown zone is a 422)? `UTC` is one. */
export function isTimeZone(name: unknown): name is string {
  return normalizeTimeZone(name) !== null;
}

/** The zone's canonical IANA name; a RangeError (a 422 for a route) when it is none. */
export function requireTimeZone(name: string): string {
  const zone = normalizeTimeZone(name);
  if (zone === null) throw new RangeError(`${JSON.stringify(name)} is not an IANA time zone; use a name such as Europe/Berlin or UTC`);
  return zone;
}

/** One UTC year of a zone: the offset at its first instant and every change of offset within it. */
interface ZoneYear {
  offsetAtStart: number;
  transitions: { at: number; offset: number }[];
}

// Finding a transition costs Temporal a search over the ICU data (0.5 to 20 ms), so each zone-year is looked up once
// and kept: a few hundred zones times a few years is a few thousand small entries. Cleared whole when full, which a
// process only reaches by being asked about thousands of zone-years.
const zoneYears = new Map<string, ZoneYear>();
const MAX_ZONE_YEARS = 4096;

function zoneYear(zone: string, year: number): ZoneYear {
  const key = `${zone} ${year}`;
  const cached = zoneYears.get(key);
  if (cached) return cached;
  const start = Math.max(utcYearStart(year), -MAX_INSTANT);
  const end = Math.min(utcYearStart(year + 1), MAX_INSTANT);
  let at = Temporal.Instant.fromEpochMilliseconds(start).toZonedDateTimeISO(zone);
  const entry: ZoneYear = { offsetAtStart: at.offsetNanoseconds / 1e6, transitions: [] };
  for (;;) {
    const next = at.getTimeZoneTransition('next');
    if (!next || next.epochMilliseconds >= end) break;
    entry.transitions.push({ at: next.epochMilliseconds, offset: next.offsetNanoseconds / 1e6 });
    at = next;
  }
  if (zoneYears.size >= MAX_ZONE_YEARS) zoneYears.clear();
  zoneYears.set(key, entry);
  return entry;
}

/** The first instant of a UTC calendar year (setUTCFullYear, as Date.UTC maps years 0 to 99 to 1900 to 1999). */
function utcYearStart(year: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, 0, 1);
  return date.getTime();
}

/** A stretch `[start, end)` of instants over which the zone's UTC offset (ms, local minus UTC) does not change. */
export interface OffsetSegment {
  start: number;
  end: number;
  offset: number;
}

/** `[from, to)` cut at the zone's transitions into segments of constant offset. */
export function offsetSegments(zone: string, from: number, to: number): OffsetSegment[] {
  const firstYear = new Date(from).getUTCFullYear();
  const lastYear = new Date(to - 1).getUTCFullYear();
  const first = zoneYear(zone, firstYear);
  let offset = first.offsetAtStart;
  for (const transition of first.transitions) if (transition.at <= from) offset = transition.offset;
  const segments: OffsetSegment[] = [];
  let start = from;
  for (let year = firstYear; year <= lastYear; year++) {
    for (const transition of zoneYear(zone, year).transitions) {
      if (transition.at <= from) continue;
      if (transition.at >= to) break;
      segments.push({ start, end: transition.at, offset });
      start = transition.at;
      offset = transition.offset;
    }
  }
  segments.push({ start, end: to, offset });
  return segments;
}
