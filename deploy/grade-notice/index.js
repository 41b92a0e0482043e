// JupyterLab on the class hub: when a hand-in has been graded at submission (autograder/on_submit), a notice with
// its score, or with why it could not be graded, and a button that opens the student's page of results.
// Plain JavaScript with no imports: it uses only JupyterLab's commands, so any JupyterLab 4 loads it.
const POLL_SECONDS = 10;
const SEEN_KEY = 'tfs-grade-notice:seen';
const OPEN_RESULTS = 'tfs-grade-notice:open-results';

function servicePrefix() {
  const data = JSON.parse(document.getElementById('jupyter-config-data').textContent);
  const hubPrefix = data.hubPrefix || '/hub/';  // "/hub/", or "/<base>/hub/" behind a base URL
  return hubPrefix.replace(/hub\/$/, '') + 'services/autograde/';
}

function seen() {
  try {
    return new Set(JSON.parse(window.localStorage.getItem(SEEN_KEY) || '[]'));
  } catch (error) {
    return new Set();
  }
}

function remember(keys) {
  window.localStorage.setItem(SEEN_KEY, JSON.stringify([...keys].slice(-500)));
}

function notice(app, prefix, item) {
  let message, type;
  if (item.state === 'graded') {
    // the score says "written answers not graded yet" where it is so; the reason, why it scored less (a time-out);
    // where the policy keeps the score until the due date, the words say so
    message = `${item.assignment}, handed in ${item.hand_in}: ${item.score || item.words}` +
      (item.reason ? `: ${item.reason}` : '');
    type = 'success';
  } else if (item.state === 'refused') {
    message = `${item.assignment}, handed in ${item.hand_in}, could not be graded: ${item.reason}`;
    type = 'error';
  } else {
    message = `${item.assignment}, handed in ${item.hand_in}: ${item.reason}`;
    type = 'info';
  }
  // apputils:notify takes its actions as commands (its arguments are JSON): the button runs OPEN_RESULTS
  const open = {label: 'Your hand-ins', commandId: OPEN_RESULTS};
  app.commands.execute('apputils:notify', {message, type, options: {autoClose: false, actions: [open]}});
}

async function poll(app, prefix, first) {
  const answer = await fetch(prefix + 'api/mine', {credentials: 'same-origin', cache: 'no-store'});
  if (!answer.ok) {
    return;
  }
  const known = seen();
  const fresh = [];
  for (const item of await answer.json()) {
    const key = `${item.assignment}|${item.hand_in}|${item.state}|${item.reason}`;
    const worth = item.state === 'graded' || item.state === 'refused' || (item.reason && item.state !== 'superseded');
    if (worth && !known.has(key)) {
      known.add(key);
      // on a new page, only what finished in the last ten minutes: older results are on the page of results
      if (!first || item.seconds === null || Date.now() - Date.parse(item.finished) < 600000) {
        fresh.push(item);
      }
    }
  }
  remember(known);
  fresh.reverse().forEach(item => notice(app, prefix, item));
}

module.exports = {
  id: 'tfs-grade-notice:plugin',
  description: 'A notice with the score of each hand-in graded at submission on the class hub',
  autoStart: true,
  activate: app => {
    const prefix = servicePrefix();
    app.commands.addCommand(OPEN_RESULTS, {
      label: 'Your hand-ins and their results',
      execute: () => { window.open(prefix, '_blank', 'noopener'); }
    });
    let first = true;
    const tick = () => poll(app, prefix, first).catch(() => undefined).finally(() => { first = false; });
    app.restored.then(() => {
      tick();
      window.setInterval(tick, POLL_SECONDS * 1000);
    });
  }
};
