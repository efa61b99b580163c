import { describe, expect, it } from 'vitest'
import { isIpLiteral, isPrivateAddress, nonPublicReason, parseIPv6 } from '../../../src/lib/egress/ip.ts'

describe('nonPublicReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.1.2', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'private (unique local)'],
    ['fd12:3456::1', 'private (unique local)'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::c0a8:101', 'private'],
    ['224.0.0.1', 'multicast or reserved'],
    ['ff02::1', 'multicast'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(nonPublicReason(address)).toBe(reason)
    expect(isPrivateAddress(address)).toBe(true)
  })

  it.each([
    '8.8.8.8',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '1.1.1.1',
  ])('accepts the public address %s', (address) => {
    expect(nonPublicReason(address)).toBeUndefined()
  })

  it('does not classify host names or malformed literals', () => {
    for (const host of ['example.org', 'localhost', '256.1.1.1', '1.2.3', '1::2::3', 'gggg::1', '1:2:3:4:5:6:7:8:9']) {
      expect(nonPublicReason(host)).toBeUndefined()
    }
    expect(isIpLiteral('example.org')).toBe(false)
    expect(isIpLiteral('1.2.3.4')).toBe(true)
  })

  it('expands IPv6 with an embedded IPv4 tail', () => {
    expect(parseIPv6('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304])
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
  })
})
