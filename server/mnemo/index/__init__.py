"""Recall's search index, in RAM: build separated from query, no language model asked.

``live`` is what the daemon holds (memories and episode passages, kept current); ``engine`` one
index over one kind of document, made of ``rows`` (bitmaps), ``lexical`` (BM25), ``vectors``
(int8 codes from ``codes``, searched through the lists of ``inverted``, saved by ``snapshot``)
and ``entities`` (Aho-Corasick), ranked by ``ranking``; ``query`` and ``text`` analyse questions
and texts; ``documents`` is what goes in and comes out.
"""
