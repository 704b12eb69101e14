"""The run inspector: recorded runs as a read-only local web page (``tidegate inspect``).

``server`` serves the pages on 127.0.0.1 only, behind a random token in the URL, GET only;
``runs`` and ``run`` render a repository's runs and one run from the store's one read path
(``store.views``); ``markup`` is the escaping every piece of stored text passes through
(the one sanitiser, then HTML escaping) and the page shell; ``style`` the stylesheet.
Nothing here writes to the store, and nothing is fetched from anywhere.
"""
