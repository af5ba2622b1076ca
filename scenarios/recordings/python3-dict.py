# A CPython workload for scenarios/recordings/python3-dict.rec: a dict of
# 1M ints to strings and a list of 2M ints (foliosim record --out
# python3-dict.rec --epoch -- /usr/bin/python3 python3-dict.py).
d = {}
for i in range(1_000_000):
    d[i] = str(i)
l = [x * 2 for x in range(2_000_000)]
print(len(d), len(l))
