#!/usr/bin/env python3
"""Write tests/golden/tracks-pyarrow.parquet: the first 60 frames of the shipped truth tracks
written by pyarrow (not polars) with what other tools put in a footer: several row groups,
dictionaries, zstd, version-2 data pages, statistics, a page index. The tables crate's test reads
it through its footer check and compares it with the CSV. Needs pyarrow (pip install pyarrow).
"""
import os
import pyarrow.csv as pc
import pyarrow.compute as pcomp
import pyarrow.parquet as pq

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
t = pc.read_csv(os.path.join(ROOT, "recordings", "default", "truth", "tracks.csv"))
t = t.filter(pcomp.less(t["frame"], 60))
pq.write_table(t, os.path.join(ROOT, "tests", "golden", "tracks-pyarrow.parquet"), row_group_size=64,
               use_dictionary=True, compression="zstd", write_statistics=True, data_page_version="2.0",
               write_page_index=True)
print(f"{t.num_rows} rows")
