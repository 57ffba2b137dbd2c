import socket, time, sys
fam = socket.AF_INET6 if sys.argv[1] == '6' else socket.AF_INET
host = '::1' if fam == socket.AF_INET6 else '127.0.0.1'
s = socket.socket(fam, socket.SOCK_DGRAM)
s.bind((host, 47100))
t0 = time.monotonic()
for i in range(20):
    while time.monotonic() < t0 + i * 0.002: pass
    s.sendto(bytes([i]) * (10 + 7 * i), (host, 47001 + (i % 2)))
