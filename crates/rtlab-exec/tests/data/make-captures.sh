#!/bin/sh
# How the capture fixtures of tests/traffic_plans.rs were made (as root,
# tcpdump 4.99 and tshark 4.0 on Linux): 20 UDP datagrams over IPv4, then
# 20 over IPv6, on lo, 2 ms apart, sizes 10 + 7i bytes, alternately to
# ports 47001 and 47002 (nothing listens: IPv4 gets ICMP port unreachable
# back, which lo_us.pcap keeps as packets that are not UDP). Each
# *.expected lists the datagrams as tshark reads them (epoch time, source,
# destination, UDP length): the tests hold rtlab's reader to it.
set -eu
cd "$(dirname "$0")"
tcpdump -i lo -w lo_us.pcap -U 'udp or icmp' & p1=$!
tcpdump -i lo -w lo_ns.pcap --time-stamp-precision=nano -U 'udp and ip6' & p2=$!
tcpdump -i any -y LINUX_SLL -w any_sll.pcap -U 'udp and port 47001' & p3=$!
tcpdump -i any -y LINUX_SLL2 -w any_sll2.pcap -U 'udp and port 47002' & p4=$!
tshark -i lo -w lo.pcapng -f udp -q & p5=$!
sleep 3
python3 udp_sender.py 4
python3 udp_sender.py 6
sleep 1
kill $p1 $p2 $p3 $p4 $p5
sleep 2
for f in lo_us.pcap lo_ns.pcap any_sll.pcap any_sll2.pcap lo.pcapng; do
    tshark -r "$f" -Y 'udp && !icmp && !icmpv6' -T fields -E separator=' ' \
        -e frame.time_epoch -e ip.src -e ipv6.src -e udp.srcport \
        -e ip.dst -e ipv6.dst -e udp.dstport -e udp.length > "$f.expected"
done
# A capture cut by its snap length: sizes from the UDP headers.
editcap -s 80 lo_ns.pcap lo_ns_snap80.pcap
