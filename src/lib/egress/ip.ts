/**
 * Pure checks of IP address literals for the outbound guard (DATA-ENGINE: safety rules). Hosts
 * come from `URL.hostname`, which already normalises IPv4 shorthands (`2130706433`, `0x7f.1`) to
 * dotted quads and IPv6 to lower-case hex (`[::ffff:7f00:1]`).
 */

/** The four octets of a dotted IPv4 literal, or undefined. */
export function parseIPv4(host: string): number[] | undefined {
  const parts = host.split('.')
  if (parts.length !== 4) return undefined
  const octets = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : Number.NaN))
  return octets.every((o) => o >= 0 && o <= 255) ? octets : undefined
}

/** The eight 16-bit groups of an IPv6 literal (brackets and zone id allowed), or undefined. */
export function parseIPv6(input: string): number[] | undefined {
  let host = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input
  host = host.split('%')[0]
  if (!host.includes(':')) return undefined
  const halves = host.split('::')
  if (halves.length > 2) return undefined
  const parseHalf = (half: string): number[] | undefined => {
    if (half === '') return []
    const groups: number[] = []
    const parts = half.split(':')
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]
      if (i === parts.length - 1 && part.includes('.')) {
        const v4 = parseIPv4(part)
        if (!v4) return undefined
        groups.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3])
      } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
        groups.push(Number.parseInt(part, 16))
      } else {
        return undefined
      }
    }
    return groups
  }
  const head = parseHalf(halves[0])
  const tail = halves.length === 2 ? parseHalf(halves[1]) : []
  if (!head || !tail) return undefined
  if (halves.length === 1) return head.length === 8 ? head : undefined
  const missing = 8 - head.length - tail.length
  if (missing < 1) return undefined
  return [...head, ...new Array(missing).fill(0), ...tail]
}

export const isIpLiteral = (host: string) => parseIPv4(host) !== undefined || parseIPv6(host) !== undefined

/** Why an IPv4 address is not public, or undefined when it is. */
function classifyIPv4([a, b]: number[]): string | undefined {
  if (a === 0) return 'unspecified'
  if (a === 127) return 'loopback'
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private'
  if (a === 169 && b === 254) return 'link-local'
  if (a === 100 && b >= 64 && b <= 127) return 'shared (CGNAT)'
  if (a >= 224) return 'multicast or reserved'
  return undefined
}

/** Why an IPv6 address is not public, or undefined when it is. */
function classifyIPv6(g: number[]): string | undefined {
  const zeroPrefix = (n: number) => g.slice(0, n).every((x) => x === 0)
  if (zeroPrefix(8)) return 'unspecified'
  if (zeroPrefix(7) && g[7] === 1) return 'loopback'
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry an IPv4 address.
  const embedded = [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff]
  if (zeroPrefix(5) && (g[5] === 0xffff || g[5] === 0)) return classifyIPv4(embedded)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return classifyIPv4(embedded)
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local'
  if ((g[0] & 0xffc0) === 0xfec0) return 'site-local'
  if ((g[0] & 0xfe00) === 0xfc00) return 'private (unique local)'
  if ((g[0] & 0xff00) === 0xff00) return 'multicast'
  return undefined
}

/**
 * Why an address literal must not be reached from a data source (loopback, private, link-local,
 * unspecified, CGNAT, multicast, or an IPv4-mapped form of those), or undefined for a public
 * address. A string that is not an IP literal is undefined too (check host names separately).
 */
export function nonPublicReason(address: string): string | undefined {
  const v4 = parseIPv4(address)
  if (v4) return classifyIPv4(v4)
  const v6 = parseIPv6(address)
  return v6 ? classifyIPv6(v6) : undefined
}

export const isPrivateAddress = (address: string) => nonPublicReason(address) !== undefined
