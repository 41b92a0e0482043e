"""The class hub (issue 41): a real JupyterHub for a class on one machine.

- `settings`: every setting of a class hub, with its meaning (`python -m autograder hub --help` prints them);
- `jupyterhub_config`: the JupyterHub configuration a hub runs with, the one an instructor deploys;
- `layout`: the hub's folder: the grader's course directory, nbgrader's exchange, the students' software;
- `accounts`: the class's Unix accounts, made as people first log in;
- `private_view`: the mount namespace in which every account sees the environment and never the repository;
- `process`: start, wait for and stop a hub;
- `cli`: `python -m autograder hub`.
"""
