"""The views stage: everything that shows a graph or a diff.

``assets`` (the built front end), ``payload`` (what travels to the browser, the default-colour rule), ``widget``
(GraphWidget), ``export`` (the offline HTML file), ``display`` (rich display and its static fallback), ``charts``
(plotly figures), ``plotly_inline`` (offline plotly.js, escaped labels), ``magics`` (IPython).
"""
