"""The history behind the gate: a store of runs (SQLite by default, PostgreSQL by URL), each record's series over
the runs, and the change points in it.

`changes` holds the change-point algorithm, one pure function of a series; `schema` the store's one versioned
schema and its migrations; `backends` the two databases behind one interface; `store` adding and reading runs;
`series` the typed points of one record's series and the values a metric judges; `detect` the changes of every
series with what else changed at them (clock, power cap, driver, machine) and the gate on them (`--fail-on`).
"""
