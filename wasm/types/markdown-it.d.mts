// markdown-it's browser build, which the build copies beside answer.js as ./markdown-it.mjs
// (builder/stages/render.py copy_page_modules); the package ships no types of its own.
declare const MarkdownIt: any;
export default MarkdownIt;
