"""A session kept: its entries in memory and in Pi's file format, the files on disk, its history
(load, switch, fork), its ids, the model and level it records, and its export as HTML."""
