# A seller's checker in Python: the deliverable is JSON whose "rows" list
# holds at least two rows. `data` is the parsed deliverable, `artifact` its text.
rows = data["rows"]
assert len(rows) >= 2, f"only {len(rows)} rows"
