"""The class hub (issue 41): a real JupyterHub for a class on one machine.

- `settings`: every setting of a class hub, with its meaning (`python -m autograder hub --help` prints them);
- `jupyterhub_config`: the JupyterHub configuration a hub runs with, the one an instructor deploys;
- `hooks`: the LTI 1.3 login (refusals in words, a launch taken once, groups from the LTI role, the LMS identity
  into the gradebook) and each account made before its first server starts;
- `layout`: the hub's folder: the grader's course directory, nbgrader's exchange, the students' software and settings;
- `release`: the assignments generated and released into the exchange, in one nbgrader process;
- `owned_collect`: nbgrader's collect that takes a hand-in only from the account it is named for;
- `accounts`: the class's Unix accounts;
- `private_view`: the mount namespace in which every account sees the environment and never the repository;
- `process`: start, wait for and stop a hub (and whatever it leaves in its namespace);
- `cli`: `python -m autograder hub`.
"""
