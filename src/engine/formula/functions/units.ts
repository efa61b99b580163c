/**
 * Units of CONVERT, with Excel's names: mass g kg mg lbm ozm stone; length m cm mm km in ft yd mi;
 * volume l L ml mL dl cl gal qt pt cup tsp tbs; time sec s mn min hr day yr wk; temperature
 * C F K (also cel, fah, kel); pressure Pa kPa mmHg atm psi; energy J kJ cal kcal.
 */
import { fail } from '../errors.ts'

interface Unit {
  group: string
  /** Size in the group's base unit; temperatures use the converters instead. */
  factor: number
}

const u = (group: string, factor: number): Unit => ({ group, factor })

const UNITS: Record<string, Unit> = {
  g: u('mass', 1),
  kg: u('mass', 1000),
  mg: u('mass', 0.001),
  lbm: u('mass', 453.59237),
  ozm: u('mass', 28.349523125),
  stone: u('mass', 6350.29318),
  m: u('length', 1),
  cm: u('length', 0.01),
  mm: u('length', 0.001),
  km: u('length', 1000),
  in: u('length', 0.0254),
  ft: u('length', 0.3048),
  yd: u('length', 0.9144),
  mi: u('length', 1609.344),
  l: u('volume', 1),
  L: u('volume', 1),
  ml: u('volume', 0.001),
  mL: u('volume', 0.001),
  dl: u('volume', 0.1),
  cl: u('volume', 0.01),
  gal: u('volume', 3.785411784),
  qt: u('volume', 0.946352946),
  pt: u('volume', 0.473176473),
  cup: u('volume', 0.2365882365),
  tsp: u('volume', 0.00492892159375),
  tbs: u('volume', 0.01478676478125),
  sec: u('time', 1),
  s: u('time', 1),
  mn: u('time', 60),
  min: u('time', 60),
  hr: u('time', 3600),
  day: u('time', 86400),
  d: u('time', 86400),
  wk: u('time', 604800),
  yr: u('time', 31557600),
  Pa: u('pressure', 1),
  kPa: u('pressure', 1000),
  mmHg: u('pressure', 133.322387415),
  atm: u('pressure', 101325),
  psi: u('pressure', 6894.757293168),
  J: u('energy', 1),
  kJ: u('energy', 1000),
  cal: u('energy', 4.1868),
  kcal: u('energy', 4186.8),
}

const TEMPERATURE: Record<string, { toK: (x: number) => number; fromK: (k: number) => number }> = {
  C: { toK: (x) => x + 273.15, fromK: (k) => k - 273.15 },
  F: { toK: (x) => ((x - 32) * 5) / 9 + 273.15, fromK: (k) => ((k - 273.15) * 9) / 5 + 32 },
  K: { toK: (x) => x, fromK: (k) => k },
}
const TEMPERATURE_ALIASES: Record<string, string> = { C: 'C', cel: 'C', F: 'F', fah: 'F', K: 'K', kel: 'K' }

/** Converts between two units of one kind; #N/A for an unknown unit or different kinds (as Excel). */
export function convert(value: number, from: string, to: string): number {
  const tf = TEMPERATURE_ALIASES[from]
  const tt = TEMPERATURE_ALIASES[to]
  if (tf && tt) return Number(TEMPERATURE[tt].fromK(TEMPERATURE[tf].toK(value)).toPrecision(15))
  const a = UNITS[from]
  const b = UNITS[to]
  if (!a || !b) return fail('NA', `unknown unit "${!a ? from : to}"`)
  if (a.group !== b.group) return fail('NA', `cannot convert ${a.group} (${from}) to ${b.group} (${to})`)
  return Number(((value * a.factor) / b.factor).toPrecision(15))
}
