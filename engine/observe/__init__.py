"""Seeing inside running topologies: figures, Prometheus metrics, a JSON API, a status page.

``figures`` reads a running topology's counters into plain data (``LocalCluster.stats``);
``routes`` answers the endpoint's requests, ``server`` serves them over HTTP on the
topology's own loop, and ``aiohttp_app`` gives the same endpoint as an aiohttp application
to mount (the only module that imports aiohttp). ``status`` writes the runner's status
line stage by stage (the input, then each stage behind a repartition hop), as the page's
header shows them.
"""
