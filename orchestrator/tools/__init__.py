"""Tools that read runs back or run many of them.

``_trace_query`` (reading traces, timelines, a packet's journey, hops), ``_perfetto``
(the Perfetto export), ``_diagram`` (an SVG space-time diagram), ``_explore`` and
``_shrink`` (fault exploration and shrinking a failing schedule), ``_report`` (run
reports as text), ``_repro`` (paper reproductions), ``repro_all`` with ``report_html``
(``slotnet repro all`` and its self-contained HTML report) and ``results_cache`` (the
on-disk cache of finished runs that makes a reproduction resumable).
"""
