"""What crosses rooms: the match record and alert types, their identities, and a read-only reader of the store
(``contracts.store.StoreReader``) and the store's schema with its version, migrations and typed rows
(``contracts.schema``; the writer is ``app.store``).

The engine produces match records (docs/semantics.md section 5), ``app`` turns them into alerts and stores both, the
dashboard and the Spark jobs read them back.  Each of those imports these types from here and nothing of the others'
insides, so a change of a record or alert shape is made once.  This package imports nothing of ``engine``, ``app``,
``collectors`` or ``dashboards``.
"""

from contracts.compiled import install as _install_compiled

_install_compiled()  # first: the compiled hot path, if built and current (contracts.compiled)
