"""CIDR functions: hosts, netmasks and subnets of IPv4 and IPv6 prefixes, as Nomad's (go-cidr)
compute them. A prefix is an address and a length ("10.0.0.0/8"); its host bits are ignored."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, takes, whole

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _network(prefix: Any) -> Network:
    text = string(prefix, "prefix")
    # Go's net.ParseCIDR wants an address and a decimal length; no netmask, no zone.
    address, slash, length = text.partition("/")
    if not slash or not re.fullmatch(r"[0-9]{1,3}", length) or "%" in address:
        raise FunctionError(f"invalid CIDR expression: invalid CIDR address: {text}")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise FunctionError(f"invalid CIDR expression: invalid CIDR address: {text}") from None


def _address(value: int, version: int) -> str:
    ip = ipaddress.ip_address(value) if version == 4 else ipaddress.IPv6Address(value)
    # Go writes an IPv4-mapped IPv6 address as the IPv4 address.
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _prefix(value: int, length: int, version: int) -> str:
    return f"{_address(value, version)}/{length}"


def _cidrhost(prefix: Any, hostnum: Any) -> str:
    number = whole(hostnum, "hostnum")
    net = _network(prefix)
    host_bits = net.max_prefixlen - net.prefixlen
    biggest = (1 << host_bits) - 1
    # A negative number counts back from the end: -1 is the last address.
    host = biggest + 1 + number if number < 0 else number
    if not 0 <= host <= biggest:
        raise FunctionError(f"prefix of {net.prefixlen} does not accommodate a host numbered {number}")
    return _address(int(net.network_address) | host, net.version)


def _cidrnetmask(prefix: Any) -> str:
    net = _network(prefix)
    return _address(int(net.netmask), net.version)


def _cidrsubnet(prefix: Any, newbits: Any, netnum: Any) -> str:
    bits, number = whole(newbits, "newbits"), whole(netnum, "netnum")
    net = _network(prefix)
    if bits > 32:
        raise FunctionError("may not extend prefix by more than 32 bits")
    if bits < 0:
        raise FunctionError("newbits must not be negative")
    length = net.prefixlen + bits
    if length > net.max_prefixlen:
        raise FunctionError(f"insufficient address space to extend prefix of {net.prefixlen} by {bits}")
    if not 0 <= number < 1 << bits:
        raise FunctionError(f"prefix extension of {bits} does not accommodate a subnet numbered {number}")
    base = int(net.network_address) | number << (net.max_prefixlen - length)
    return _prefix(base, length, net.version)


def _cidrsubnets(prefix: Any, *newbits: Any) -> list[str]:
    net = _network(prefix)
    size, start = net.max_prefixlen, int(net.network_address)
    if not newbits:
        return []
    lengths = []
    for i, value in enumerate(newbits, 1):
        bits = whole(value, "newbits")
        if bits < 1:
            raise FunctionError(f"argument {i}: must extend prefix by at least one bit")
        if bits > 32:
            raise FunctionError(f"argument {i}: may not extend prefix by more than 32 bits")
        if net.prefixlen + bits > size:
            protocol = "IPv4" if net.version == 4 else "IPv6"
            raise FunctionError(
                f"argument {i}: would extend prefix to {net.prefixlen + bits} bits, "
                f"which is too long for an {protocol} address"
            )
        lengths.append(net.prefixlen + bits)
    # Each subnet is the next one of its length after the one before (go-cidr's NextSubnet),
    # starting from the subnet before the prefix's first, so that the first is the first.
    everything = (1 << size) - 1
    current_value = ((start - 1) & everything) & _mask(lengths[0], size)
    current_length = lengths[0]
    out = []
    for i, length in enumerate(lengths, 1):
        last = current_value | (everything >> current_length)  # the current subnet's last address
        following = ((last & _mask(length, size)) | (everything >> length)) + 1
        rolled_over = following > everything
        following &= everything
        if rolled_over or following & _mask(net.prefixlen, size) != start:
            raise FunctionError(
                f"argument {i}: not enough remaining address space for a subnet with a prefix of "
                f"{length} bits after {_prefix(current_value, current_length, net.version)}"
            )
        current_value, current_length = following, length
        out.append(_prefix(current_value, current_length, net.version))
    return out


def _mask(length: int, size: int) -> int:
    return ((1 << length) - 1) << (size - length)


def table() -> dict[str, Fn]:
    return {
        "cidrhost": takes(_cidrhost, "prefix", "hostnum"),
        "cidrnetmask": takes(_cidrnetmask, "prefix"),
        "cidrsubnet": takes(_cidrsubnet, "prefix", "newbits", "netnum"),
        "cidrsubnets": takes(_cidrsubnets, "prefix", rest="newbits"),
    }
