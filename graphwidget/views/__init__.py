"""The views stage: everything that shows a graph or a diff.

``assets`` (the built front end), ``payload`` (what travels to the browser, the default-colour rule), ``packed``
(the binary form it travels in: graphs as typed columns), ``widget`` (GraphWidget), ``diff_widget`` and
``diff_payload`` (the same for a diff), ``export`` (the offline HTML file), ``display`` (rich display and its static
fallback), ``charts`` and ``diff_figure`` (plotly figures), ``plotly_inline`` (offline plotly.js, escaped labels),
``nway_view`` and ``nway_widget`` (the N-way view and widget), ``chrome_trace`` and ``model_explorer`` (exports for
a trace viewer and for Model Explorer). The magics are entry points: ``graphwidget/entry/``."""
