# A checker that uses the language and library a seller's checker would:
# f-strings, json, re, dataclasses, collections, a class hierarchy and a
# generator. It checks the artifact whatever its type, through `artifact`
# (and `data` where the artifact is JSON).
import json
import re
from collections import Counter, defaultdict, namedtuple
from dataclasses import dataclass, field


@dataclass
class Finding:
    name: str
    score: float
    tags: list = field(default_factory=list)


class Rule:
    def check(self, value):
        raise NotImplementedError


class Positive(Rule):
    def check(self, value):
        return value > 0


class Even(Positive):
    def check(self, value):
        return super().check(value) and value % 2 == 0


def numbers(text):
    for m in re.finditer(r"-?\d+", text):
        yield int(m.group())


Point = namedtuple("Point", "x y")
nums = list(numbers(artifact))
assert nums, f"no numbers in {artifact[:40]!r}"
counts = Counter(n % 3 for n in nums)
groups = defaultdict(list)
for n in nums:
    groups["even" if Even().check(n) else "other"].append(n)
finding = Finding(name=f"{len(nums)} numbers", score=sum(nums) / len(nums), tags=sorted(groups))
assert json.loads(json.dumps(finding.__dict__))["name"] == f"{len(nums)} numbers"
assert Point(1, 2).y == 2
if data is not None:
    assert isinstance(data, (dict, list)), type(data)
print(f"{finding.name}; mean {finding.score:.2f}; mod3 {sorted(counts.items())}")
