import QtQuick
import QtTest
import "../../../ui/markdown.js" as Markdown

// Splitting messages into prose and code segments; line breaks kept as CommonMark hard breaks.
TestCase {
    name: "Markdown"

    TextEdit {
        id: rendered
        width: 600
        textFormat: TextEdit.MarkdownText
    }
    // The plain text of `markdown` as the chat renders it.
    function render(markdown) {
        rendered.text = Markdown.hardBreaks(markdown)
        return rendered.getText(0, rendered.length)
    }

    function test_plainProse() {
        const s = Markdown.split("Hello **world**")
        compare(s.length, 1)
        compare(s[0].type, "prose")
        compare(s[0].text, "Hello **world**")
    }

    function test_codeBetweenProse() {
        const s = Markdown.split("Intro\n```python\nx = 1\n\ny = 2\n```\nOutro")
        compare(s.length, 3)
        compare(s[0].text, "Intro")
        compare(s[1].type, "code")
        compare(s[1].language, "python")
        compare(s[1].text, "x = 1\n\ny = 2")
        compare(s[2].text, "Outro")
    }

    function test_tildeAndLongerFences() {
        const s = Markdown.split("~~~\na\n```\nstill code\n~~~\n````md\n```inner```\n````")
        compare(s.length, 2)
        compare(s[0].text, "a\n```\nstill code")
        compare(s[1].language, "md")
        compare(s[1].text, "```inner```")
    }

    function test_unterminatedFenceIsCode() {
        const s = Markdown.split("Look:\n```js\nlet a")
        compare(s.length, 2)
        compare(s[1].type, "code")
        compare(s[1].text, "let a")
    }

    function test_emptyAndBlank() {
        compare(Markdown.split("").length, 0)
        compare(Markdown.split("\n  \n").length, 0)
        compare(Markdown.split(undefined).length, 0)
    }

    function test_inlineBackticksAreProse() {
        const s = Markdown.split("Use `ls` and ``` inline ``` here")
        compare(s.length, 1)
        compare(s[0].type, "prose")
    }

    function test_singleNewlinesAreKept() {
        // A poem keeps its lines.
        const poem = render("Roses are red,\nviolets are blue.\n\nThe end.")
        compare(rendered.lineCount, 3, JSON.stringify(poem))
        compare(Markdown.hardBreaks("a\nb"), "a  \nb")
        compare(Markdown.hardBreaks("a  \nb\\\nc\n\nd"), "a  \nb\\\nc\n\nd", "existing breaks stay")
    }

    function test_structureIsUnchanged() {
        // Lists, tables and headings keep their structure: no stray spaces, pipes or lines.
        const list = render("Steps:\n1. one\n2. two")
        compare(rendered.lineCount, 3)
        verify(list.indexOf("1.") < 0, JSON.stringify(list))
        const table = render("| a | b |\n|---|---|\n| 1 | 2 |")
        verify(table.indexOf("|") < 0 && table.indexOf("a") >= 0, JSON.stringify(table))
        render("# Title\nText")
        compare(rendered.lineCount, 2)
    }

    function test_linksTakeTheThemeColour() {
        compare(Markdown.colourLinks("See [the docs](https://x.org/a?b=1&c=2) now", "#8ab4f8"),
                "See <a href=\"https://x.org/a?b=1&amp;c=2\" style=\"color:#8ab4f8\">the docs</a> now")
        compare(Markdown.colourLinks("Go to https://x.org/p.", "#8ab4f8"),
                "Go to <a href=\"https://x.org/p\" style=\"color:#8ab4f8\">https://x.org/p</a>.")
        compare(Markdown.colourLinks("`[a](b)` and ![img](p.png)", "#8ab4f8"), "`[a](b)` and ![img](p.png)",
                "code spans and images stay")
    }
}
