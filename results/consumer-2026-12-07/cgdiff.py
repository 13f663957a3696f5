import subprocess, re, sys
def load(f):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", "--tree=none", f], capture_output=True, text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) \([^)]*\)\s+(\S.*?)\s*(\[.*\])?$", line)
        if m and "PROGRAM TOTALS" not in line:
            name = m.group(2)
            name = re.sub(r"^/usr/local/go/src/|^/work/main/", "", name)
            d[name] = d.get(name, 0) + int(m.group(1).replace(",", ""))
    return d
name, n1, n2 = sys.argv[1], sys.argv[2], sys.argv[3]
a, b = load(f"{name}-{n1}.cg"), load(f"{name}-{n2}.cg")
per = (int(n2) - int(n1))
rows = sorted(((b.get(k, 0) - a.get(k, 0)) / per, k) for k in set(a) | set(b))
rows = [r for r in rows if abs(r[0]) >= 0.5]
for v, k in sorted(rows, reverse=True):
    print(f"{v:8.1f}  {k}")
print(f"{sum(v for v, _ in rows):8.1f}  total of the rows above")
