"""A minimal course for build tests: one chapter, and the front matter of one lesson in it."""

COURSE = """\
chapters:
  - id: "01"
    name: Memory Model
    stage: Memory
    journey_question: What occupies the GPU?
    question: What is consuming the machine?
    summary: One request in GPU memory.
"""
FRONT = """\
---
id: 01
chapter: "01"
title: KV Cache
question: Why does the cache grow?
bottleneck: Repeated decode compute
primary_metric: ITL + memory
minutes: 8
summary: Keys and values are kept.
---
"""
