"""JavaScript in Ergon: the V8 sandbox (:mod:`compiler.js.engine`) and the bundles it loads.

The checker parses Handlebars prompts and JavaScript with it, the runtime renders Handlebars and
JST prompts and runs ``runJavascriptCode`` steps with it. Importing this package starts nothing:
the sandbox process starts the first time something is parsed or evaluated.
"""
