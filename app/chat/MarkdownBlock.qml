pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Ember

// One Markdown block of a message (a row of MessageBlocks): prose, rendered in C++, or code. Its
// item exists only while the block is shown (folded reasoning makes none); MarkdownBlocks places
// the block and says whether it is in the list's view.
Item {
    id: block
    required property int index
    required property string kind
    required property string html
    required property string code
    required property string language
    required property bool reasoning
    property bool reasoningVisible: true  // the message's reasoning is unfolded
    property MessageBlocks highlighter: null
    property color linkColor
    property int fontSize: 14
    readonly property bool active: !reasoning || reasoningVisible
    property Item item: null  // the prose or code item, when made
    property bool inView: false  // set by MarkdownBlocks.updateShown()
    height: item ? item.height : 0
    visible: active && inView

    // Qt 6.4's Loader cannot make components bound to this file (pragma ComponentBehavior:
    // Bound); a Repeater of one item or none can.
    Repeater {
        model: block.active && block.kind !== "code" ? 1 : 0
        onItemAdded: (index, made) => block.item = made
        onItemRemoved: (index, gone) => {
            if (block.item === gone) block.item = null
        }
        TextEdit {
            objectName: "proseText"
            // Rendered in C++ (line breaks kept, tables padded); links in the theme's colour
            // (readable in the dark theme). Reasoning in the hint colour.
            text: "<style>a { color: " + block.linkColor + "; }</style>" + block.html
            width: block.width
            textFormat: TextEdit.RichText
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.Wrap
            color: block.reasoning ? Material.hintTextColor : Material.foreground
            selectionColor: Material.accent
            font.pixelSize: block.fontSize
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
            highlighter: block.highlighter
            fontSize: block.fontSize
        }
    }
}
