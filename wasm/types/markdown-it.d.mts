// markdown-it's browser build, which the build copies beside answer.js as ./markdown-it.mjs
// (builder/site/runtime.py copy_page_modules): the same code as the npm package, so its types.
export { default } from "markdown-it";
