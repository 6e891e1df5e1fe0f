pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Ember

// The messages of the open conversation. Follows the end while a response streams in, unless
// the user has scrolled up.
ListView {
    id: root
    required property ChatController controller
    property int fontSize: 14
    property bool following: true

    objectName: "chatView"
    model: controller ? controller.messages : null
    clip: true
    spacing: 2
    topMargin: 12
    bottomMargin: 12
    boundsBehavior: Flickable.StopAtBounds
    ScrollBar.vertical: ScrollBar {}

    delegate: MessageDelegate {
        controller: root.controller
        isLast: index === root.count - 1
        fontSize: root.fontSize
    }

    onMovementEnded: following = atYEnd
    onCountChanged: if (following) Qt.callLater(positionViewAtEnd)
    onContentHeightChanged: if (following && !moving) Qt.callLater(positionViewAtEnd)

    Column {
        anchors.centerIn: parent
        visible: root.count === 0
        spacing: 8
        Label {
            anchors.horizontalCenter: parent.horizontalCenter
            text: qsTr("Ember")
            font.pixelSize: 32
            font.bold: true
            color: Material.accent
        }
        Label {
            anchors.horizontalCenter: parent.horizontalCenter
            text: qsTr("Chat with a language model that runs on this computer.")
            color: Material.hintTextColor
        }
    }
}
