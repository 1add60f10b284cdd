import json, sys
for path in sys.argv[1:]:
    print("==", path)
    for line in open(path):
        r = json.loads(line)
        n = r.get("name", "")
        if "failed" in r:
            print(f"{n:45} FAILED {r['failed'][:80]}"); continue
        if "p50_us" in r and "cpu_total_us_per_msg" in r:
            print(f"{n:45} p50 {r.get('p50_us') or 0:7.0f} p99 {r.get('p99_us') or 0:7.0f} p999 {r.get('p999_us') or 0:7.0f} send50 {r.get('send_p50_us') or 0:5.0f} cpu {r['cpu_total_us_per_msg']:6.0f} us/msg {r.get('msgs_per_s') or 0:7.0f}/s {'BEHIND' if r.get('fell_behind') else ''} {r.get('cpu_affinity','')}")
        elif "target" in r or "goal" in r:
            print(f"   target {n}: {r.get('value')} {r.get('unit','')} goal {r.get('goal', r.get('target'))} {r.get('met','')}")
