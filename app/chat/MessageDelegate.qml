pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// One message: its reasoning (collapsible), Markdown prose and code blocks, with Copy, Edit (own
// messages) and Regenerate (the last answer). `blocks` is the message parsed in C++
// (MessageBlocks): one row per Markdown block, so that a streamed batch changes only the last.
Item {
    id: root
    required property int index
    required property string role
    required property string content
    required property bool streaming
    required property bool complete
    required property MessageBlocks blocks
    required property int reasoningMs
    required property int version
    required property int versions
    required property string model
    required property int tokens
    required property real tokensPerSecond
    required property real ttftMs
    required property string stopReason
    required property ChatController controller
    property bool isLast: false
    property int fontSize: 14
    property bool editing: false
    readonly property bool isUser: role === "user"
    readonly property bool busy: controller ? controller.generating : false
    readonly property bool thinking: blocks ? blocks.thinking : false
    // The reasoning shows while it runs and folds away when the answer starts; a click on its
    // header shows it again.
    readonly property bool reasoningVisible: reasoningHeader.expanded
    onThinkingChanged: reasoningHeader.expanded = thinking

    // Blocks scrolled out of the list's view leave the scene graph (visible: false), so that a
    // frame walks only the blocks in view and costs the same at the end of a long reply as at
    // its start. They keep their place because blocks are placed here rather than by a Column
    // (which closes the gap of a hidden item). The blocks in view are found by binary search and
    // only those that enter or leave it change.
    property int shownFrom: 0
    property int shownTo: -1
    function updateShown() {
        const n = blockRepeater.count
        if (n > 0 && !blockRepeater.itemAt(n - 1)) {
            Qt.callLater(root.updateShown)  // the Repeater is still making the blocks
            return
        }
        const view = ListView.view
        let from = 0, to = n - 1
        if (view && n > 0) {
            const origin = y + column.y + bubble.y + segments.y + blockArea.y
            const low = view.contentY - origin - 200
            const high = view.contentY + view.height - origin + 200
            let a = 0, b = n
            while (a < b) {
                const m = (a + b) >> 1, it = blockRepeater.itemAt(m)
                if (it.y + it.height < low) a = m + 1; else b = m
            }
            let c = a, d = n
            while (c < d) {
                const m = (c + d) >> 1
                if (blockRepeater.itemAt(m).y <= high) c = m + 1; else d = m
            }
            from = a
            to = c - 1
        }
        const setShown = (i, shown) => {
            const it = blockRepeater.itemAt(i)
            if (it) it.inView = shown
        }
        for (let i = shownFrom; i <= Math.min(shownTo, n - 1); ++i)
            if (i < from || i > to) setShown(i, false)
        for (let i = from; i <= to; ++i)
            if (i < shownFrom || i > shownTo) setShown(i, true)
        shownFrom = from
        shownTo = to
    }
    // Places blocks [first, end) below each other, 8 px apart (a block of no height takes no
    // room), and sizes blockArea to them. A streamed batch changes the last block's height, so
    // only it is placed again; a change further up (a resize, reasoning folded) places the rest
    // once, later in this event loop pass.
    property int placePending: -1
    function place(first) {
        if (blockRepeater.count - first <= 4) {
            placeNow(first)
        } else {
            placePending = placePending < 0 ? first : Math.min(placePending, first)
            Qt.callLater(root.placeLater)
        }
    }
    function placeLater() {
        const first = placePending
        placePending = -1
        if (first >= 0) placeNow(first)
    }
    function placeNow(first) {
        const n = blockRepeater.count
        const gap = segments.spacing
        let i = Math.max(0, Math.min(first, n))
        let next = 0  // where block i goes
        if (i > 0) {
            const prev = blockRepeater.itemAt(i - 1)
            next = prev.y + (prev.height > 0 ? prev.height + gap : 0)
        }
        for (; i < n; ++i) {
            const it = blockRepeater.itemAt(i)
            if (!it) break  // not made yet: placed when it is added
            it.y = next
            next += it.height > 0 ? it.height + gap : 0
        }
        blockArea.height = next > 0 ? next - gap : 0
        updateShown()
    }
    Connections {
        target: root.ListView.view
        function onContentYChanged() { root.updateShown() }
        function onHeightChanged() { root.updateShown() }
    }
    onYChanged: updateShown()
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    implicitHeight: column.implicitHeight + 20
    width: ListView.view ? ListView.view.width : implicitWidth

    HoverHandler { id: hover }
    // The unwrapped width of the text, to fit a short message's bubble to it.
    Text {
        id: measure
        visible: false
        // Only a user's bubble is sized to its text (laying out a long reply would cost as much).
        text: root.isUser ? root.content : ""
        font.pixelSize: root.fontSize
    }

    ColumnLayout {
        id: column
        x: 20
        y: 10
        width: root.width - 40
        spacing: 4

        Label {
            text: root.isUser ? qsTr("You") : qsTr("Assistant")
            font.bold: true
            font.pixelSize: root.fontSize - 1
            color: root.isUser ? Material.accent : Material.foreground
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
        }

        Rectangle {
            id: bubble
            objectName: "bubble"
            visible: !root.editing
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            Layout.preferredWidth: root.isUser ? Math.min(measure.implicitWidth + 30, column.width * 0.8)
                                               : column.width
            implicitHeight: segments.implicitHeight + 20
            radius: 10
            color: root.isUser ? theme.alpha(Material.accent, 0.14) : theme.assistantBubble

            Column {
                id: segments
                x: 14
                y: 10
                width: bubble.width - 28
                spacing: 8
                ReasoningHeader {
                    id: reasoningHeader
                    visible: root.blocks ? root.blocks.hasReasoning : false
                    thinking: root.thinking
                    durationMs: root.reasoningMs
                    expanded: root.thinking
                    fontSize: root.fontSize
                }
                // The Markdown blocks, placed by place().
                Item {
                    id: blockArea
                    width: segments.width
                    Repeater {
                        id: blockRepeater
                        model: root.blocks
                        onItemAdded: (i) => root.place(i)
                        onItemRemoved: (i) => root.place(i)
                        // Qt 6.4's Loader cannot make components bound to this file (pragma
                        // ComponentBehavior: Bound); a Repeater of one item or none can.
                        delegate: Item {
                            id: block
                            required property int index
                            required property string kind
                            required property string html
                            required property string code
                            required property string language
                            required property bool reasoning
                            readonly property bool active: !reasoning || root.reasoningVisible
                            property Item item: null  // the prose or code item, when made
                            property bool inView: false  // set by updateShown()
                            width: blockArea.width
                            height: item ? item.height : 0
                            visible: active && inView
                            onHeightChanged: root.place(index)
                            Repeater {
                                model: block.active && block.kind !== "code" ? 1 : 0
                                onItemAdded: (index, made) => block.item = made
                                onItemRemoved: (index, gone) => {
                                    if (block.item === gone) block.item = null
                                }
                                TextEdit {
                                    objectName: "proseText"
                                    // Rendered in C++ (line breaks kept, tables padded); links in
                                    // the theme's colour (readable in the dark theme). Reasoning
                                    // in the hint colour.
                                    text: "<style>a { color: " + theme.link + "; }</style>" + block.html
                                    width: block.width
                                    textFormat: TextEdit.RichText
                                    readOnly: true
                                    selectByMouse: true
                                    wrapMode: TextEdit.Wrap
                                    color: block.reasoning ? Material.hintTextColor
                                                           : Material.foreground
                                    selectionColor: Material.accent
                                    font.pixelSize: root.fontSize
                                    onLinkActivated: (link) => Qt.openUrlExternally(link)
                                }
                            }
                            Repeater {
                                model: block.active && block.kind === "code" ? 1 : 0
                                onItemAdded: (index, made) => block.item = made
                                onItemRemoved: (index, gone) => {
                                    if (block.item === gone) block.item = null
                                }
                                CodeBlock {
                                    width: block.width
                                    code: block.code
                                    language: block.language
                                    highlighter: root.blocks
                                    fontSize: root.fontSize
                                }
                            }
                        }
                    }
                }
                Label {
                    visible: root.streaming && root.content.length === 0
                    text: qsTr("Thinking…")
                    color: Material.hintTextColor
                }
                Label {
                    objectName: "stoppedLabel"
                    visible: !root.complete && !root.streaming && !root.isUser
                    text: root.stopReason === "max_tokens" ? qsTr("(stopped at the token limit)")
                        : root.stopReason === "cancelled" || root.stopReason === "callback" ? qsTr("(stopped)")
                        : root.stopReason === "context_full" ? qsTr("(stopped: the context is full)")
                        : qsTr("(incomplete)")
                    color: Material.hintTextColor
                    font.italic: true
                }
            }
        }

        EditBox {
            visible: root.editing
            Layout.fillWidth: true
            initialText: root.content
            onAccepted: (text) => { root.editing = false; root.controller.editAndResend(root.index, text) }
            onCanceled: root.editing = false
        }

        MessageFooter {
            objectName: "messageFooter"
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            visible: !root.editing && !root.streaming && (versions > 1 || details.length > 0)
            version: root.version
            versions: root.versions
            busy: root.busy
            model: root.isUser ? "" : root.model
            tokens: root.isUser ? 0 : root.tokens
            tokensPerSecond: root.isUser ? 0 : root.tokensPerSecond
            ttftMs: root.isUser ? 0 : root.ttftMs
            fontSize: root.fontSize
            onSwitchVersion: (step) => root.controller.switchVersion(root.index, step)
        }

        RowLayout {
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            opacity: hover.hovered || root.isLast ? 1 : 0
            visible: !root.editing && !root.streaming
            spacing: 0
            ToolButton {
                objectName: "copyMessageButton"
                text: qsTr("Copy")
                font.pixelSize: root.fontSize - 2
                onClicked: root.controller.copyText(root.content)
            }
            ToolButton {
                objectName: "editButton"
                visible: root.isUser
                enabled: !root.busy
                text: qsTr("Edit")
                font.pixelSize: root.fontSize - 2
                onClicked: root.editing = true
            }
            ToolButton {
                objectName: "continueButton"
                // An answer cut short (stopped, the token limit, a crash): generate more of it.
                visible: !root.isUser && root.isLast && !root.complete
                enabled: !root.busy
                text: qsTr("Continue")
                font.pixelSize: root.fontSize - 2
                onClicked: root.controller.continueResponse()
            }
            ToolButton {
                objectName: "regenerateButton"
                // The last answer, or the last message when it was never answered.
                visible: root.isLast
                enabled: !root.busy
                text: qsTr("Regenerate")
                font.pixelSize: root.fontSize - 2
                onClicked: root.controller.regenerate()
            }
        }
    }
}
