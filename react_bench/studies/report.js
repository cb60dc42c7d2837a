// report.html's examples: report.py writes the page, scan.py the pages of examples it loads. Each
// run's index and trajectories come a page at a time from the side folder as scripts (a file://
// page may load a script, not read a file). Rows are set as text; a trajectory is the HTML that
// trajectory.py wrote, every text of the run in it escaped.
const RB = { waiting: {}, rows: {}, html: {} };
const SIDE = document.body.dataset.side + '/';

RB.load = (src) => new Promise((done, fail) => {
  if (RB.waiting[src]) { RB.waiting[src].push(done); return; }
  RB.waiting[src] = [done];
  const s = document.createElement('script');
  s.src = src;
  s.onerror = () => fail(new Error('cannot load ' + src));
  s.onload = () => RB.waiting[src].forEach(f => f());
  document.head.appendChild(s);
});
RB.index = (run, page, rows) => { (RB.rows[run] = RB.rows[run] || {})[page] = rows; };
RB.traj = (run, page, html) => { (RB.html[run] = RB.html[run] || {})[page] = html; };

async function indexPage(run, page) {
  if (!(RB.rows[run] && RB.rows[run][page])) await RB.load(SIDE + run + '/i' + page + '.js');
  return RB.rows[run][page];
}

async function trajectory(run, page, i) {
  if (!(RB.html[run] && RB.html[run][page])) await RB.load(SIDE + run + '/t' + page + '.js');
  return RB.html[run][page][i];
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  td.textContent = String(text);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

async function openTrajectory(details, run, page, i) {
  if (details.dataset.loaded) return;
  details.dataset.loaded = '1';
  const div = document.createElement('div');
  div.className = 'trajectory';
  div.innerHTML = await trajectory(run, page, i);
  details.appendChild(div);
}

function rowsOf(section, items) {
  const body = section.querySelector('tbody');
  body.textContent = '';
  for (const [page, i, row] of items) {
    const [id, question, gold, prediction, correct, label, epoch] = row;
    const tr = document.createElement('tr');
    tr.dataset.id = id;
    cell(tr, epoch > 1 ? id + ' (attempt ' + epoch + ')' : id);
    const q = cell(tr, question);
    const d = document.createElement('details');
    const s = document.createElement('summary');
    s.textContent = 'trajectory';
    d.appendChild(s);
    q.appendChild(d);
    d.addEventListener('toggle', () => { if (d.open) openTrajectory(d, section.id, page, i); });
    cell(tr, gold);
    cell(tr, prediction);
    cell(tr, correct ? 'right' : 'wrong', correct ? 'right' : 'wrong');
    cell(tr, label);
    body.appendChild(tr);
  }
}

async function showPage(section, page) {
  const pages = +section.dataset.pages;
  const at = section.querySelector('.at');
  if (!pages) { at.textContent = 'no examples'; return; }
  page = Math.max(0, Math.min(pages - 1, page));
  section.dataset.page = page;
  const rows = await indexPage(section.id, page);
  rowsOf(section, rows.map((row, i) => [page, i, row]));
  at.textContent = 'page ' + (page + 1) + ' of ' + pages + ' (' + section.dataset.n + ' examples)';
}

function matches(row, needle) {
  const [id, question, gold, prediction, , label] = row;
  return [id, question, gold, prediction, label].some(v => String(v).toLowerCase().includes(needle));
}

async function search(section, text, limit) {
  const said = section.querySelector('.said');
  const pages = +section.dataset.pages;
  const needle = text.toLowerCase();
  const hits = [];
  for (let page = 0; page < pages && hits.length < limit; page++) {
    said.textContent = 'searching page ' + (page + 1) + ' of ' + pages;
    (await indexPage(section.id, page)).forEach((row, i) => {
      if (hits.length < limit && matches(row, needle)) hits.push([page, i, row]);
    });
  }
  said.textContent = hits.length + (hits.length >= limit ? '+' : '') + ' found for "' + text + '"';
  rowsOf(section, hits);
  return hits;
}

async function openExample(section, id) {
  section.open = true;
  const said = section.querySelector('.said');
  const pages = +section.dataset.pages;
  for (let page = 0; page < pages; page++) {
    const rows = await indexPage(section.id, page);
    const i = rows.findIndex(row => String(row[0]) === id);
    if (i >= 0) {
      rowsOf(section, [[page, i, rows[i]]]);
      section.dataset.page = page;
      section.querySelector('.at').textContent = 'page ' + (page + 1) + ' of ' + pages;
      said.textContent = 'example ' + id;
      const d = section.querySelector('tbody details');
      d.open = true;
      await openTrajectory(d, section.id, page, i);
      section.scrollIntoView();
      return true;
    }
  }
  said.textContent = 'no example ' + id;
  return false;
}

document.querySelectorAll('details.run').forEach(section => {
  section.querySelector('.prev').onclick = () => showPage(section, +section.dataset.page - 1);
  section.querySelector('.next').onclick = () => showPage(section, +section.dataset.page + 1);
  let timer;
  section.querySelector('.find').oninput = (ev) => {
    clearTimeout(timer);
    const text = ev.target.value.trim();
    timer = setTimeout(() => (text ? search(section, text, 500) : showPage(section, 0)), 300);
  };
  showPage(section, 0);
});

function fromHash() {
  const hash = decodeURIComponent(location.hash.slice(1));
  const cut = hash.indexOf('/');
  const section = cut > 0 ? document.getElementById(hash.slice(0, cut)) : null;
  if (section && section.matches('details.run')) openExample(section, hash.slice(cut + 1));
}
window.addEventListener('hashchange', fromHash);
fromHash();
