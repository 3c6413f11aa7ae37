extension AdminAPI {
    /// The status page's script: fetches `status.json` (relative, so that it works behind a
    /// reverse proxy's path too) at once and every 5 s, and draws the tiles, the charts, the
    /// header and the peers again, as ``chart(_:times:)`` and ``tiles(_:)`` draw them. No library:
    /// the page works offline. Text from the gateway goes in through `textContent` only. On a
    /// failed fetch (the gateway stopped, a token needed) the header says so and the last view
    /// stays. Its marks, for a test: `#refreshed[data-by=script]` once it has drawn.
    static let statusScript = #"""
        (function () {
          'use strict';
          var W = 380, H = 130, LEFT = 44, BOTTOM = 18, TOP = 8;
          var COLORS = {enterprise: '#1f6feb', oma: '#e8590c', all: '#555555'};
          function figure(v) {
            if (v === null || v === undefined || !isFinite(v)) return '\u2013';
            return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
          }
          function scaleTop(v) {
            if (!(v > 0) || !isFinite(v)) return 1;
            var p = Math.pow(10, Math.floor(Math.log10(v))), m = v / p;
            return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
          }
          function spanText(s) { return s < 120 ? Math.round(s) + ' s' : Math.round(s / 60) + ' min'; }
          function chart(lines, times) {
            var last = times.length ? times[times.length - 1] : Date.now() / 1000;
            var span = Math.max(60, times.length ? last - times[0] : 0);
            var all = [];
            lines.forEach(function (l) { l.values.forEach(function (v) { if (v !== null && isFinite(v)) all.push(v); }); });
            var top = scaleTop(all.length ? Math.max.apply(null, all) : 0);
            function x(t) { return (LEFT + (W - LEFT - 4) * (1 - (last - t) / span)).toFixed(1); }
            function y(v) { return (TOP + (H - TOP - BOTTOM) * (1 - v / top)).toFixed(1); }
            var svg = '<svg class="chart" viewBox="0 0 ' + W + ' ' + H + '" width="' + W + '" height="' + H + '">' +
              '<path class="axis" d="M' + LEFT + ' ' + TOP + 'V' + (H - BOTTOM) + 'H' + (W - 4) + '"/>' +
              '<text x="' + (LEFT - 4) + '" y="' + (TOP + 8) + '" text-anchor="end">' + figure(top) + '</text>' +
              '<text x="' + (LEFT - 4) + '" y="' + (H - BOTTOM) + '" text-anchor="end">0</text>' +
              '<text x="' + LEFT + '" y="' + (H - 4) + '">\u2212' + spanText(span) + '</text>' +
              '<text x="' + (W - 4) + '" y="' + (H - 4) + '" text-anchor="end">now</text>';
            var drawn = false;
            lines.forEach(function (l) {
              var d = '', run = 0;
              for (var i = 0; i < times.length; i++) {
                var v = l.values[i];
                if (v === null || v === undefined || !isFinite(v)) { if (run === 1) d += 'l0 0'; run = 0; continue; }
                d += (run === 0 ? 'M' : 'L') + x(times[i]) + ' ' + y(v);
                run += 1;
              }
              if (run === 1) d += 'l0 0';
              if (!d) return;
              drawn = true;
              svg += '<path class="line" stroke="' + l.color + '" d="' + d + '"/>';
            });
            if (!drawn) {
              svg += '<text class="nodata" x="' + Math.round((W + LEFT) / 2) + '" y="' + Math.round(H / 2) +
                '" text-anchor="middle">no data yet</text>';
            }
            var legend = lines.map(function (l) {
              return '<span style="color:' + l.color + '">\u25A0</span> ' + l.label;
            }).join(' ');
            return svg + '</svg><div class="legend">' + legend + '</div>';
          }
          function pick(samples, f) { return samples.map(function (s) { var v = f(s); return v === undefined ? null : v; }); }
          function ms(l, q) { return l ? l[q] * 1000 : null; }
          function draw(id, title, lines, times) {
            var figureElement = document.getElementById('chart-' + id);
            if (figureElement) figureElement.innerHTML = '<figcaption>' + title + '</figcaption>' + chart(lines, times);
          }
          function charts(samples) {
            var times = samples.map(function (s) { return Date.parse(s.time) / 1000; });
            var sides = {};
            samples.forEach(function (s) { Object.keys(s.requestsPerSecond).forEach(function (k) { sides[k] = true; }); });
            draw('requests', 'Requests received /s', Object.keys(sides).sort().map(function (side) {
              return {label: side, color: COLORS[side] || '#555555',
                      values: pick(samples, function (s) { return s.requestsPerSecond[side]; })};
            }), times);
            draw('notifies', 'NOTIFYs relayed /s', [{label: 'NOTIFY', color: '#2f9e44',
              values: pick(samples, function (s) { return s.notifiesPerSecond; })}], times);
            draw('rejections', 'Rejected and refused /s', [
              {label: 'rejected', color: '#c92a2a', values: pick(samples, function (s) { return s.rejectionsPerSecond; })},
              {label: 'refused', color: '#7048e8', values: pick(samples, function (s) { return s.refusalsPerSecond; })}
            ], times);
            var kinds = [['enterprise_watchers', '#1f6feb'], ['oma_watchers', '#e8590c'], ['oma_legs', '#74c0fc'],
                         ['enterprise_legs', '#ffa94d']];
            draw('subscriptions', 'Active subscriptions', kinds.map(function (k) {
              return {label: k[0].replace(/_/g, ' '), color: k[1],
                      values: pick(samples, function (s) { return s.subscriptions[k[0]]; })};
            }), times);
            draw('latency', 'Latency (ms)', [
              {label: 'response p50', color: '#1f6feb', values: pick(samples, function (s) { return ms(s.responseLatency, 'p50'); })},
              {label: 'response p99', color: '#0b3d91', values: pick(samples, function (s) { return ms(s.responseLatency, 'p99'); })},
              {label: 'relay p50', color: '#2f9e44', values: pick(samples, function (s) { return ms(s.relayLatency, 'p50'); })},
              {label: 'relay p99', color: '#1b5e20', values: pick(samples, function (s) { return ms(s.relayLatency, 'p99'); })}
            ], times);
          }
          function text(id, value) { var e = document.getElementById(id); if (e) e.textContent = value; }
          function tiles(last) {
            if (!last) return;
            var sides = Object.keys(last.requestsPerSecond);
            text('v-requests', figure(sides.length ? sides.reduce(function (a, k) {
              return a === null || last.requestsPerSecond[k] === null ? null : a + last.requestsPerSecond[k];
            }, 0) : null));
            text('v-notifies', figure(last.notifiesPerSecond));
            text('v-rejected', figure(last.rejectionsPerSecond));
            text('v-refused', figure(last.refusalsPerSecond));
            text('v-watchers', String((last.subscriptions.enterprise_watchers || 0) + (last.subscriptions.oma_watchers || 0)));
            text('v-response-p99', figure(ms(last.responseLatency, 'p99')));
            text('v-relay-p99', figure(ms(last.relayLatency, 'p99')));
          }
          function ago(date, now) { return date ? Math.round((now - Date.parse(date)) / 1000) + '\u00a0s ago' : 'never'; }
          function peers(list, now) {
            var body = document.getElementById('peers-body');
            if (!body) return;
            while (body.firstChild) body.removeChild(body.firstChild);
            list.forEach(function (p) {
              var healthy = !p.lastFailure || (p.lastSuccess && Date.parse(p.lastSuccess) > Date.parse(p.lastFailure.time));
              var row = document.createElement('tr');
              var cells = [p.name, p.side, p.configured ? 'yes' : 'no', ago(p.lastSuccess, now),
                           p.lastFailure ? ago(p.lastFailure.time, now) + ': ' + p.lastFailure.reason : 'none',
                           p.requestsPerSecond.toFixed(1), p.rejectionsPerSecond.toFixed(1)];
              cells.forEach(function (c, i) {
                var td = document.createElement('td');
                if (i === 0) {
                  var mark = document.createElement('span');
                  mark.className = healthy ? 'ok' : 'bad';
                  mark.textContent = healthy ? '\u25CF ' : '\u25B2 ';
                  td.appendChild(mark);
                }
                td.appendChild(document.createTextNode(c));
                row.appendChild(td);
              });
              body.appendChild(row);
            });
          }
          function uptime(s) {
            var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
            return (d ? d + ' d ' : '') + (d || h ? h + ' h ' : '') + m + ' min ' + (s % 60) + ' s';
          }
          function store(s) {
            var parts = [s.kind + (s.location ? ' ' + s.location : ''), s.available ? 'available' : 'UNAVAILABLE'];
            if (s.pendingChanges !== null && s.pendingChanges !== undefined) parts.push(s.pendingChanges + ' pending');
            if (s.node) parts.push('node ' + s.node + ', lease ' + s.leaseSeconds + ' s');
            return parts.join(', ');
          }
          function refresh() {
            fetch('status.json', {cache: 'no-store', credentials: 'same-origin'}).then(function (r) {
              if (!r.ok) throw new Error('HTTP ' + r.status);
              return r.json();
            }).then(function (s) {
              var now = Date.parse(s.now);
              text('uptime', uptime(s.uptimeSeconds));
              text('store', store(s.store));
              tiles(s.samples[s.samples.length - 1]);
              charts(s.samples);
              peers(s.peers, now);
              var mark = document.getElementById('refreshed');
              mark.textContent = 'updated ' + new Date(now).toISOString().substring(11, 19) + ' UTC';
              mark.setAttribute('data-by', 'script');
              mark.className = 'ok';
            }).catch(function (e) {
              var mark = document.getElementById('refreshed');
              mark.textContent = 'status.json: ' + e.message + ' (showing the last view)';
              mark.className = 'bad';
            });
          }
          refresh();
          setInterval(refresh, 5000);
        })();
        """#
}
